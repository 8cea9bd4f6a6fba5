"""An os-ken application that puts a meter between two hosts, after two
meters the switch must refuse, for xswitch's integration tests
(test/openflow_meters_test.go).

XSWITCH_TEST_PORTS names the OpenFlow ports A,B. On connecting it empties
the switch's flows and meters, sends meter 1 with no bands and meter 2
with a band of rate 0, adds meter 3 (pktps, a drop band far above the
ping rate), a flow from A through meter 3 to B and one from B back to A,
and asks for the meters' configurations. It writes to the file
XSWITCH_TEST_OUT each error as the line "error type=T code=C" and each
meter configured as "meter-config meter_id=M flags=F bands=[(TYPE, RATE),
...]".
"""

import os

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_3


class Meters(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def features(self, ev):
        dp = ev.msg.datapath
        ofp, parser = dp.ofproto, dp.ofproto_parser
        a, b = (int(p) for p in os.environ["XSWITCH_TEST_PORTS"].split(","))
        dp.send_msg(parser.OFPFlowMod(dp, command=ofp.OFPFC_DELETE, table_id=ofp.OFPTT_ALL,
                                      out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
                                      match=parser.OFPMatch()))
        dp.send_msg(parser.OFPMeterMod(dp, command=ofp.OFPMC_DELETE, meter_id=ofp.OFPM_ALL))
        dp.send_msg(parser.OFPMeterMod(dp, command=ofp.OFPMC_ADD, flags=ofp.OFPMF_KBPS,
                                       meter_id=1, bands=[]))
        dp.send_msg(parser.OFPMeterMod(dp, command=ofp.OFPMC_ADD, flags=ofp.OFPMF_KBPS,
                                       meter_id=2, bands=[parser.OFPMeterBandDrop(rate=0)]))
        dp.send_msg(parser.OFPMeterMod(dp, command=ofp.OFPMC_ADD, flags=ofp.OFPMF_PKTPS,
                                       meter_id=3, bands=[parser.OFPMeterBandDrop(rate=10000)]))
        self.add_flow(dp, parser.OFPMatch(in_port=a), [parser.OFPInstructionMeter(3, ofp.OFPIT_METER)],
                      [parser.OFPActionOutput(b)])
        self.add_flow(dp, parser.OFPMatch(in_port=b), [], [parser.OFPActionOutput(a)])
        dp.send_msg(parser.OFPMeterConfigStatsRequest(dp, 0, ofp.OFPM_ALL))

    def add_flow(self, dp, match, inst, actions):
        ofp, parser = dp.ofproto, dp.ofproto_parser
        inst = inst + [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
        dp.send_msg(parser.OFPFlowMod(datapath=dp, priority=10, match=match, instructions=inst))

    def write(self, line):
        with open(os.environ["XSWITCH_TEST_OUT"], "a") as out:
            out.write(line + "\n")

    @set_ev_cls(ofp_event.EventOFPErrorMsg, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    def error(self, ev):
        self.write("error type=%d code=%d" % (ev.msg.type, ev.msg.code))

    @set_ev_cls(ofp_event.EventOFPMeterConfigStatsReply, MAIN_DISPATCHER)
    def meter_config(self, ev):
        for m in ev.msg.body:
            bands = [(band.type, band.rate) for band in m.bands]
            self.write("meter-config meter_id=%d flags=%d bands=%s" % (m.meter_id, m.flags, bands))
