"""An os-ken application that puts a select group between two hosts, for
xswitch's integration tests (test/openflow_groups_test.go).

XSWITCH_TEST_PORTS names the OpenFlow ports A,B,C. On connecting it empties
the switch's flows and groups, adds select group 1 with a bucket of weight
0 to C (which no flow takes) and one of weight 3 to B, a flow from A to the
group and one from B back to A, and asks for the groups' descriptions. It
writes what comes back to the file XSWITCH_TEST_OUT as the line
"group-desc group_id=G type=T buckets=[(WEIGHT, PORT), ...]".
"""

import os

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_3


class SelectGroup(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def features(self, ev):
        dp = ev.msg.datapath
        ofp, parser = dp.ofproto, dp.ofproto_parser
        a, b, c = (int(p) for p in os.environ["XSWITCH_TEST_PORTS"].split(","))
        dp.send_msg(parser.OFPFlowMod(dp, command=ofp.OFPFC_DELETE, table_id=ofp.OFPTT_ALL,
                                      out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
                                      match=parser.OFPMatch()))
        dp.send_msg(parser.OFPGroupMod(dp, command=ofp.OFPGC_DELETE, type_=ofp.OFPGT_ALL,
                                       group_id=ofp.OFPG_ALL))
        buckets = [
            parser.OFPBucket(weight=0, watch_port=ofp.OFPP_ANY, watch_group=ofp.OFPG_ANY,
                             actions=[parser.OFPActionOutput(c)]),
            parser.OFPBucket(weight=3, watch_port=ofp.OFPP_ANY, watch_group=ofp.OFPG_ANY,
                             actions=[parser.OFPActionOutput(b)]),
        ]
        dp.send_msg(parser.OFPGroupMod(dp, command=ofp.OFPGC_ADD, type_=ofp.OFPGT_SELECT,
                                       group_id=1, buckets=buckets))
        self.add_flow(dp, parser.OFPMatch(in_port=a), [parser.OFPActionGroup(1)])
        self.add_flow(dp, parser.OFPMatch(in_port=b), [parser.OFPActionOutput(a)])
        dp.send_msg(parser.OFPGroupDescStatsRequest(dp, 0))

    def add_flow(self, dp, match, actions):
        ofp, parser = dp.ofproto, dp.ofproto_parser
        inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
        dp.send_msg(parser.OFPFlowMod(datapath=dp, priority=10, match=match, instructions=inst))

    @set_ev_cls(ofp_event.EventOFPGroupDescStatsReply, MAIN_DISPATCHER)
    def group_desc(self, ev):
        with open(os.environ["XSWITCH_TEST_OUT"], "a") as out:
            for g in ev.msg.body:
                buckets = [(bk.weight, bk.actions[0].port) for bk in g.buckets]
                out.write("group-desc group_id=%d type=%d buckets=%s\n" % (g.group_id, g.type, buckets))
