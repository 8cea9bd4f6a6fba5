"""A reactive learning switch for os-ken, the controller xswitch's
integration tests drive it with (test/openflow_test.go).

On connecting it empties the switch's table 0 and installs a table-miss
flow that sends every frame to the controller. Each packet-in teaches it
where its source lives; a frame to a known station gets a flow
(in_port, eth_src, eth_dst -> output) and is sent on with a packet-out,
any other is flooded. Every packet-in is logged as a line
"packet-in in_port=N reason=R len=L" on standard error, so that the test
can count them.
"""

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib.packet import ethernet, packet
from os_ken.ofproto import ofproto_v1_3


class LearningSwitch(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.stations = {}  # datapath id -> {MAC: port}

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def features(self, ev):
        dp = ev.msg.datapath
        ofp, parser = dp.ofproto, dp.ofproto_parser
        self.logger.info("connected datapath_id=%016x", dp.id)
        dp.send_msg(parser.OFPFlowMod(dp, command=ofp.OFPFC_DELETE, table_id=ofp.OFPTT_ALL,
                                      out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
                                      match=parser.OFPMatch()))
        self.add_flow(dp, 0, parser.OFPMatch(),
                      [parser.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)])

    def add_flow(self, dp, priority, match, actions):
        ofp, parser = dp.ofproto, dp.ofproto_parser
        inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
        dp.send_msg(parser.OFPFlowMod(datapath=dp, priority=priority, match=match, instructions=inst))

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def packet_in(self, ev):
        msg = ev.msg
        dp = msg.datapath
        ofp, parser = dp.ofproto, dp.ofproto_parser
        in_port = msg.match["in_port"]
        self.logger.info("packet-in in_port=%d reason=%d len=%d", in_port, msg.reason, len(msg.data))
        eth = packet.Packet(msg.data).get_protocols(ethernet.ethernet)[0]
        table = self.stations.setdefault(dp.id, {})
        table[eth.src] = in_port
        out_port = table.get(eth.dst, ofp.OFPP_FLOOD)
        actions = [parser.OFPActionOutput(out_port)]
        if out_port != ofp.OFPP_FLOOD:
            self.add_flow(dp, 10, parser.OFPMatch(in_port=in_port, eth_src=eth.src, eth_dst=eth.dst), actions)
        dp.send_msg(parser.OFPPacketOut(datapath=dp, buffer_id=ofp.OFP_NO_BUFFER, in_port=in_port,
                                        actions=actions, data=msg.data))
