package rstp

// The state machines of 802.1D-2004 clause 17, one method each. Names of
// variables, procedures and states are the standard's, so that each piece
// can be checked against its figure. Where 802.1Q-2005 corrected 802.1D
// (a TCN sets rcvdTcn; a dispute clears agreed), the correction is taken,
// as OVS takes it.

// maxRounds bounds the rounds of one run: the machines come to rest in a
// few; more means two of them undo each other, which Status reports.
const maxRounds = 1000

// port is one port's variables (17.17, 17.19) and machine states.
type port struct {
	b      *Bridge
	number uint16
	cfg    PortConfig
	id     PortID

	// Timers, in seconds (17.17).
	edgeDelayWhile, fdWhile, helloWhen, mdelayWhile uint16
	rbWhile, rcvdInfoWhile, rrWhile, tcWhile        uint16

	agree, agreed       bool
	designatedPriority  priorityVector
	designatedTimes     Times
	disputed            bool
	forward, forwarding bool
	infoIs              infoIs
	learn, learning     bool
	mcheck              bool
	msgPriority         priorityVector
	msgTimes            Times
	newInfo             bool
	operEdge            bool
	portEnabled         bool
	portPriority        priorityVector
	portTimes           Times
	proposed, proposing bool
	rcvdBPDU            bool
	rcvdInfo            rcvdInfo
	rcvdMsg             bool
	rcvdRSTP, rcvdSTP   bool
	rcvdTc, rcvdTcAck   bool
	rcvdTcn             bool
	reRoot, reselect    bool
	role, selectedRole  Role
	selected            bool
	sendRSTP            bool
	sync, synced        bool
	tcAck, tcProp       bool
	txCount             uint16
	updtInfo            bool

	rcvd     BPDU  // the BPDU rcvdBPDU announces
	reported State // the state Env last heard

	prxState prxState
	ppmState ppmState
	bdmState bdmState
	pimState pimState
	prtState prtState
	pstState pstState
	tcmState tcmState

	rxBPDUs, txBPDUs, rxDropped uint64
}

type infoIs uint8

const (
	infoDisabled infoIs = iota
	infoReceived
	infoMine
	infoAged
)

type rcvdInfo uint8

const (
	otherInfo rcvdInfo = iota
	superiorDesignatedInfo
	repeatedDesignatedInfo
	inferiorDesignatedInfo
	inferiorRootAlternateInfo
)

type (
	prsState uint8
	prxState uint8
	ppmState uint8
	bdmState uint8
	pimState uint8
	prtState uint8
	pstState uint8
	tcmState uint8
)

const (
	prsInitBridge prsState = iota
	prsRoleSelection
)

const (
	prxDiscard prxState = iota
	prxReceive
)

const (
	ppmCheckingRSTP ppmState = iota
	ppmSelectingSTP
	ppmSensing
)

const (
	bdmEdge bdmState = iota
	bdmNotEdge
)

const (
	pimDisabled pimState = iota
	pimAged
	pimCurrent
)

const (
	prtInitPort prtState = iota
	prtDisablePort
	prtDisabledPort
	prtRootPort
	prtDesignatedPort
	prtBlockPort
	prtAlternatePort
)

const (
	pstDiscarding pstState = iota
	pstLearning
	pstForwarding
)

const (
	tcmInactive tcmState = iota
	tcmLearning
	tcmActive
)

// run moves every machine until none can: after an event, and after
// every tick.
func (b *Bridge) run() {
	for range maxRounds {
		moved := b.prs()
		for _, p := range b.ports {
			moved = p.prx() || moved
			moved = p.ppm() || moved
			moved = p.bdm() || moved
			moved = p.pim() || moved
		}
		moved = b.prs() || moved
		for _, p := range b.ports {
			moved = p.prt() || moved
			moved = p.pst() || moved
			moved = p.tcm() || moved
			moved = p.ptx() || moved
		}
		if !moved {
			return
		}
	}
	b.unsettled++
}

// begin puts the port's machines in their initial states, as BEGIN does,
// and takes the unconditional transitions out of them at once, as BEGIN
// does too: before role selection has given the port a role, which
// DISABLE_PORT would otherwise take for its own.
func (p *port) begin() {
	b := p.b
	p.designatedTimes = b.bridgeTimes
	p.portTimes = b.bridgeTimes
	p.selectedRole = RoleDisabled
	p.enterPrxDiscard()
	p.enterCheckingRSTP()
	p.enterBdm(p.cfg.AdminEdge)
	p.newInfo, p.txCount = true, 0 // TRANSMIT_INIT
	p.enterPtxIdle()
	p.enterPimDisabled()
	p.enterInitPort()
	p.enterPrt(prtDisablePort)
	p.reported = Forwarding // what the port did before the machines ran
	p.enterPstDiscarding()
	p.enterTcmInactive()
}

// Derived values (17.20).

func (b *Bridge) rstpVersion() bool { return b.cfg.ForceVersion >= VersionRSTP }

func (p *port) fwdDelay() uint16  { return p.designatedTimes.ForwardDelay }
func (p *port) helloTime() uint16 { return p.designatedTimes.HelloTime }
func (p *port) maxAge() uint16    { return p.designatedTimes.MaxAge }

// forwardDelay is how long a port waits in a state without agreement:
// a hello time with RSTP, the forward delay with STP.
func (p *port) forwardDelay() uint16 {
	if p.sendRSTP {
		return p.helloTime()
	}
	return p.fwdDelay()
}

// edgeDelay is how long a designated port waits for a BPDU before it
// takes itself for an edge port. Ethernet ports are point to point.
func (p *port) edgeDelay() uint16 { return MigrateTime }

func (b *Bridge) allSynced() bool {
	for _, q := range b.ports {
		if !q.selected || q.role != q.selectedRole || q.updtInfo || !(q.synced || q.role == RoleRoot) {
			return false
		}
	}
	return true
}

func (p *port) reRooted() bool {
	for _, q := range p.b.ports {
		if q != p && q.rrWhile != 0 {
			return false
		}
	}
	return true
}

func (p *port) state() State {
	switch {
	case p.forwarding:
		return Forwarding
	case p.learning:
		return Learning
	}
	return Discarding
}

// report tells Env the port's state when it changed.
func (p *port) report() {
	if s := p.state(); s != p.reported {
		p.reported = s
		p.b.env.SetState(p.number, s)
	}
}

// Procedures (17.21).

func (p *port) betterOrSameInfo(newInfoIs infoIs) bool {
	switch newInfoIs {
	case infoReceived:
		return p.infoIs == infoReceived && p.msgPriority.compare(p.portPriority) <= 0
	case infoMine:
		return p.infoIs == infoMine && p.designatedPriority.compare(p.portPriority) <= 0
	}
	return false
}

func (b *Bridge) clearReselectTree() {
	for _, p := range b.ports {
		p.reselect = false
	}
}

func (p *port) newTcWhile() {
	if p.tcWhile != 0 {
		return
	}
	if p.sendRSTP {
		p.tcWhile = p.helloTime() + 1
		p.newInfo = true
	} else {
		p.tcWhile = p.b.rootTimes.MaxAge + p.b.rootTimes.ForwardDelay
	}
}

// rcvInfo decodes the received BPDU into msgPriority and msgTimes and
// says what it is news of (17.21.8).
func (p *port) rcvInfo() rcvdInfo {
	m := &p.rcvd
	if m.Type == TypeTCN {
		p.rcvdTcn = true // 802.1Q-2005; 802.1D-2004 loses it
		return otherInfo
	}
	p.msgPriority = priorityVector{
		root: m.Root, rootPathCost: m.RootPathCost,
		designatedBridge: m.Bridge, designatedPort: m.Port, bridgePort: p.id,
	}
	p.msgTimes = Times{
		MessageAge: m.MessageAge.Seconds(), MaxAge: m.MaxAge.Seconds(),
		HelloTime: m.HelloTime.Seconds(), ForwardDelay: m.ForwardDelay.Seconds(),
	}
	n := p.msgPriority.against(p.portPriority)
	switch role := m.role(); {
	case role == roleDesignatedPort && (n == superior || n == same && p.msgTimes != p.portTimes):
		return superiorDesignatedInfo
	case role == roleDesignatedPort && n == same:
		return repeatedDesignatedInfo
	case role == roleDesignatedPort:
		return inferiorDesignatedInfo
	case (role == roleRootPort || role == roleAlternateOrBup) && n != superior:
		return inferiorRootAlternateInfo
	}
	return otherInfo
}

func (p *port) recordAgreement() {
	if p.b.rstpVersion() && p.rcvd.Type == TypeRST && p.rcvd.Flags&FlagAgreement != 0 {
		p.agreed, p.proposing = true, false
	} else {
		p.agreed = false
	}
}

func (p *port) recordDispute() {
	if p.rcvd.Type == TypeRST && p.rcvd.Flags&FlagLearning != 0 {
		p.disputed, p.agreed = true, false // 802.1Q-2005
	}
}

func (p *port) recordProposal() {
	if p.rcvd.Type == TypeRST && p.rcvd.role() == roleDesignatedPort && p.rcvd.Flags&FlagProposal != 0 {
		p.proposed = true
	}
}

func (p *port) recordTimes() {
	p.portTimes = p.msgTimes
	p.portTimes.HelloTime = max(p.msgTimes.HelloTime, 1)
}

func (b *Bridge) setSyncTree() {
	for _, p := range b.ports {
		p.sync = true
	}
}

func (b *Bridge) setReRootTree() {
	for _, p := range b.ports {
		p.reRoot = true
	}
}

func (b *Bridge) setSelectedTree() {
	for _, p := range b.ports {
		if p.reselect {
			return
		}
	}
	for _, p := range b.ports {
		p.selected = true
	}
}

func (p *port) setTcFlags() {
	switch p.rcvd.Type {
	case TypeConfig, TypeRST:
		p.rcvdTc = p.rcvdTc || p.rcvd.Flags&FlagTopologyChange != 0
		p.rcvdTcAck = p.rcvdTcAck || p.rcvd.Flags&FlagTopologyChangeAck != 0
	case TypeTCN:
		p.rcvdTcn = true
	}
}

func (p *port) setTcPropTree() {
	for _, q := range p.b.ports {
		if q != p {
			q.tcProp = true
		}
	}
}

func (p *port) transmit(bpdu BPDU) {
	if !p.portEnabled {
		return
	}
	p.txBPDUs++
	p.b.env.Transmit(p.number, bpdu)
}

func (p *port) txConfig() {
	bpdu := p.designatedBPDU(VersionSTP, TypeConfig)
	if p.tcWhile != 0 {
		bpdu.Flags |= FlagTopologyChange
	}
	if p.tcAck {
		bpdu.Flags |= FlagTopologyChangeAck
	}
	p.transmit(bpdu)
}

func (p *port) txRstp() {
	bpdu := p.designatedBPDU(VersionRSTP, TypeRST)
	role := uint8(roleAlternateOrBup)
	switch p.role {
	case RoleRoot:
		role = roleRootPort
	case RoleDesignated:
		role = roleDesignatedPort
	}
	bpdu.Flags = role << flagRoleShift
	for _, f := range []struct {
		set  bool
		flag uint8
	}{
		{p.agree, FlagAgreement}, {p.proposing, FlagProposal}, {p.learning, FlagLearning},
		{p.forwarding, FlagForwarding}, {p.tcWhile != 0, FlagTopologyChange},
	} {
		if f.set {
			bpdu.Flags |= f.flag
		}
	}
	p.transmit(bpdu)
}

func (p *port) txTcn() { p.transmit(BPDU{Version: VersionSTP, Type: TypeTCN}) }

// designatedBPDU is a BPDU carrying the port's designated priority vector
// and times.
func (p *port) designatedBPDU(version uint8, t Type) BPDU {
	v, times := p.designatedPriority, p.designatedTimes
	return BPDU{
		Version: version, Type: t,
		Root: v.root, RootPathCost: v.rootPathCost, Bridge: v.designatedBridge, Port: v.designatedPort,
		MessageAge: TimeOf(times.MessageAge), MaxAge: TimeOf(times.MaxAge),
		HelloTime: TimeOf(times.HelloTime), ForwardDelay: TimeOf(times.ForwardDelay),
	}
}

func (p *port) updtBPDUVersion() {
	if p.rcvd.Type == TypeRST {
		p.rcvdRSTP = true
	} else {
		p.rcvdSTP = true
	}
}

func (p *port) updtRcvdInfoWhile() {
	if t := p.portTimes; t.MessageAge+1 <= t.MaxAge {
		p.rcvdInfoWhile = 3 * t.HelloTime
	} else {
		p.rcvdInfoWhile = 0
	}
}

func (b *Bridge) updtRoleDisabledTree() {
	for _, p := range b.ports {
		p.selectedRole = RoleDisabled
	}
}

// updtRolesTree chooses the root port and every port's role (17.21.25).
func (b *Bridge) updtRolesTree() {
	// a, b) The best of the bridge's own vector and the root path vectors
	// of the ports that received one from another bridge.
	best, bestTimes := b.bridgePriority, b.bridgeTimes
	var rootPort *port
	for _, p := range b.ports {
		if p.infoIs != infoReceived || p.portPriority.designatedBridge.Address() == b.id.Address() {
			continue
		}
		v := p.portPriority
		v.rootPathCost += p.cfg.PathCost
		v.bridgePort = p.id
		if v.compare(best) < 0 {
			best, rootPort = v, p
			// c) the root port's times, one second older.
			bestTimes = p.portTimes
			bestTimes.MessageAge++
		}
	}
	b.rootPriority, b.rootTimes = best, bestTimes
	b.rootPortID = 0
	if rootPort != nil {
		b.rootPortID = rootPort.id
	}
	for _, p := range b.ports {
		// d, e) What the port would offer as designated port.
		p.designatedPriority = priorityVector{
			root: best.root, rootPathCost: best.rootPathCost,
			designatedBridge: b.id, designatedPort: p.id, bridgePort: p.id,
		}
		p.designatedTimes = b.rootTimes
		p.designatedTimes.HelloTime = b.bridgeTimes.HelloTime
		// f to l) Its role.
		switch p.infoIs {
		case infoDisabled:
			p.selectedRole = RoleDisabled
		case infoAged:
			p.updtInfo, p.selectedRole = true, RoleDesignated
		case infoMine:
			p.selectedRole = RoleDesignated
			if p.portPriority != p.designatedPriority || p.portTimes != p.designatedTimes {
				p.updtInfo = true
			}
		case infoReceived:
			switch {
			case p == rootPort:
				p.selectedRole, p.updtInfo = RoleRoot, false
			case p.designatedPriority.compare(p.portPriority) >= 0:
				if p.portPriority.designatedBridge.Address() != b.id.Address() {
					p.selectedRole = RoleAlternate
				} else {
					p.selectedRole = RoleBackup
				}
				p.updtInfo = false
			default:
				p.selectedRole, p.updtInfo = RoleDesignated, true
			}
		}
	}
}

// Port Role Selection (17.28).

func (b *Bridge) enterInitBridge() {
	b.prsState = prsInitBridge
	b.updtRoleDisabledTree()
}

func (b *Bridge) prs() bool {
	switch b.prsState {
	case prsInitBridge:
		b.enterRoleSelection()
		return true
	case prsRoleSelection:
		for _, p := range b.ports {
			if p.reselect {
				b.enterRoleSelection()
				return true
			}
		}
	}
	return false
}

func (b *Bridge) enterRoleSelection() {
	b.prsState = prsRoleSelection
	b.clearReselectTree()
	b.updtRolesTree()
	b.setSelectedTree()
}

// Port Receive (17.23).

func (p *port) enterPrxDiscard() {
	p.prxState = prxDiscard
	p.rcvdBPDU, p.rcvdRSTP, p.rcvdSTP = false, false, false
	p.rcvdMsg = false
	p.edgeDelayWhile = MigrateTime
}

func (p *port) enterPrxReceive() {
	p.prxState = prxReceive
	p.updtBPDUVersion()
	p.operEdge, p.rcvdBPDU = false, false
	p.rcvdMsg = true
	p.edgeDelayWhile = MigrateTime
}

func (p *port) prx() bool {
	if (p.rcvdBPDU || p.edgeDelayWhile != MigrateTime) && !p.portEnabled {
		p.enterPrxDiscard()
		return true
	}
	if p.rcvdBPDU && p.portEnabled && (p.prxState == prxDiscard || !p.rcvdMsg) {
		p.enterPrxReceive()
		return true
	}
	return false
}

// Port Protocol Migration (17.24).

func (p *port) enterCheckingRSTP() {
	p.ppmState = ppmCheckingRSTP
	p.mcheck = false
	p.sendRSTP = p.b.rstpVersion()
	p.mdelayWhile = MigrateTime
}

func (p *port) ppm() bool {
	switch p.ppmState {
	case ppmCheckingRSTP:
		if p.mdelayWhile == 0 {
			p.enterSensing()
			return true
		}
		if p.mdelayWhile != MigrateTime && !p.portEnabled {
			p.enterCheckingRSTP()
			return true
		}
	case ppmSelectingSTP:
		if p.mdelayWhile == 0 || !p.portEnabled || p.mcheck {
			p.enterSensing()
			return true
		}
	case ppmSensing:
		if !p.portEnabled || p.mcheck || p.b.rstpVersion() && !p.sendRSTP && p.rcvdRSTP {
			p.enterCheckingRSTP()
			return true
		}
		if p.sendRSTP && p.rcvdSTP {
			p.ppmState = ppmSelectingSTP
			p.sendRSTP = false
			p.mdelayWhile = MigrateTime
			return true
		}
	}
	return false
}

func (p *port) enterSensing() {
	p.ppmState = ppmSensing
	p.rcvdRSTP, p.rcvdSTP = false, false
}

// Bridge Detection (17.25).

func (p *port) enterBdm(edge bool) {
	p.bdmState, p.operEdge = bdmNotEdge, edge
	if edge {
		p.bdmState = bdmEdge
	}
}

func (p *port) bdm() bool {
	switch p.bdmState {
	case bdmEdge:
		if !p.portEnabled && !p.cfg.AdminEdge || !p.operEdge {
			p.bdmState, p.operEdge = bdmNotEdge, false
			return true
		}
	case bdmNotEdge:
		if !p.portEnabled && p.cfg.AdminEdge ||
			p.edgeDelayWhile == 0 && p.cfg.AutoEdge && p.sendRSTP && p.proposing {
			p.bdmState, p.operEdge = bdmEdge, true
			return true
		}
	}
	return false
}

// Port Transmit (17.26). TRANSMIT_INIT goes to IDLE at once (begin), and
// TRANSMIT_PERIODIC, _CONFIG, _TCN and _RSTP go back to it
// unconditionally, so IDLE is the machine's one resting state and each of
// the others is its actions followed by IDLE's.

func (p *port) enterPtxIdle() { p.helloWhen = p.helloTime() }

func (p *port) ptx() bool {
	// A disabled port has nothing to say, as in OVS.
	if p.role == RoleDisabled || !p.selected || p.updtInfo {
		return false
	}
	b := p.b
	canSend := p.newInfo && p.txCount < b.cfg.TransmitHoldCount && p.helloWhen != 0
	switch {
	case p.helloWhen == 0: // TRANSMIT_PERIODIC
		p.newInfo = p.newInfo || p.role == RoleDesignated || p.role == RoleRoot && p.tcWhile != 0
	case p.sendRSTP && canSend: // TRANSMIT_RSTP
		p.newInfo = false
		p.txRstp()
		p.txCount++
		p.tcAck = false
	case !p.sendRSTP && canSend && p.role == RoleRoot: // TRANSMIT_TCN
		p.newInfo = false
		p.txTcn()
		p.txCount++
	case !p.sendRSTP && canSend && p.role == RoleDesignated: // TRANSMIT_CONFIG
		p.newInfo = false
		p.txConfig()
		p.txCount++
		p.tcAck = false
	default:
		return false
	}
	p.enterPtxIdle()
	return true
}

// Port Information (17.27). UPDATE and the states after RECEIVE go on to
// CURRENT unconditionally.

func (p *port) enterPimDisabled() {
	p.pimState = pimDisabled
	p.rcvdMsg = false
	p.proposing, p.proposed, p.agree, p.agreed = false, false, false, false
	p.rcvdInfoWhile = 0
	p.infoIs = infoDisabled
	p.reselect, p.selected = true, false
}

func (p *port) enterPimAged() {
	p.pimState = pimAged
	p.infoIs = infoAged
	p.reselect, p.selected = true, false
}

func (p *port) pim() bool {
	if !p.portEnabled && p.infoIs != infoDisabled {
		p.enterPimDisabled()
		return true
	}
	switch p.pimState {
	case pimDisabled:
		if p.rcvdMsg {
			p.enterPimDisabled()
			return true
		}
		if p.portEnabled {
			p.enterPimAged()
			return true
		}
	case pimAged:
		if p.selected && p.updtInfo {
			p.update()
			return true
		}
	case pimCurrent:
		switch {
		case p.selected && p.updtInfo:
			p.update()
		case p.infoIs == infoReceived && p.rcvdInfoWhile == 0 && !p.updtInfo && !p.rcvdMsg:
			p.enterPimAged()
		case p.rcvdMsg && !p.updtInfo:
			p.receive()
		default:
			return false
		}
		return true
	}
	return false
}

// update is UPDATE: the port takes its designated priority vector as its
// own.
func (p *port) update() {
	p.proposing, p.proposed = false, false
	p.agreed = p.agreed && p.betterOrSameInfo(infoMine)
	p.synced = p.synced && p.agreed
	p.portPriority, p.portTimes = p.designatedPriority, p.designatedTimes
	p.updtInfo = false
	p.infoIs = infoMine
	p.newInfo = true
	p.pimState = pimCurrent
}

// receive is RECEIVE and what follows it.
func (p *port) receive() {
	p.rcvdInfo = p.rcvInfo()
	switch p.rcvdInfo {
	case superiorDesignatedInfo:
		p.agreed, p.proposing = false, false
		p.recordProposal()
		p.setTcFlags()
		p.agree = p.agree && p.betterOrSameInfo(infoReceived)
		p.portPriority = p.msgPriority // recordPriority
		p.recordTimes()
		p.updtRcvdInfoWhile()
		p.infoIs = infoReceived
		p.reselect, p.selected = true, false
	case repeatedDesignatedInfo:
		p.recordProposal()
		p.setTcFlags()
		p.updtRcvdInfoWhile()
	case inferiorDesignatedInfo:
		p.recordDispute()
	case inferiorRootAlternateInfo:
		p.recordAgreement()
		p.setTcFlags()
	}
	p.rcvdMsg = false
	p.pimState = pimCurrent
}

// Port Role Transitions (17.29). Every transition but the unconditional
// ones is qualified by selected && !updtInfo. The states that go back
// unconditionally to ROOT_PORT, DESIGNATED_PORT or ALTERNATE_PORT are
// their actions followed by that state's, unless the role changes first.

func (p *port) enterInitPort() {
	p.prtState = prtInitPort
	p.role = RoleDisabled
	p.learn, p.forward = false, false
	p.synced = false
	p.sync, p.reRoot = true, true
	p.rrWhile = p.fwdDelay()
	p.fdWhile = p.maxAge()
	p.rbWhile = 0
}

func (p *port) enterPrt(s prtState) {
	p.prtState = s
	switch s {
	case prtDisablePort:
		p.role = p.selectedRole
		p.learn, p.forward = false, false
	case prtDisabledPort:
		p.fdWhile = p.maxAge()
		p.synced = true
		p.rrWhile = 0
		p.sync, p.reRoot = false, false
	case prtRootPort:
		p.role = RoleRoot
		p.rrWhile = p.fwdDelay()
	case prtDesignatedPort:
		p.role = RoleDesignated
	case prtBlockPort:
		p.role = p.selectedRole
		p.learn, p.forward = false, false
	case prtAlternatePort:
		p.fdWhile = p.forwardDelay()
		p.synced = true
		p.rrWhile = 0
		p.sync, p.reRoot = false, false
	}
}

// newRole is the state a change of selected role leads to, if any.
func (p *port) newRole() (prtState, bool) {
	if p.selectedRole == p.role {
		return 0, false
	}
	switch p.selectedRole {
	case RoleDisabled:
		return prtDisablePort, true
	case RoleRoot:
		return prtRootPort, true
	case RoleDesignated:
		return prtDesignatedPort, true
	}
	return prtBlockPort, true
}

// back returns from a passing state to main, or to the new role's state.
func (p *port) back(main prtState) bool {
	if s, ok := p.newRole(); ok {
		p.enterPrt(s)
	} else {
		p.enterPrt(main)
	}
	return true
}

func (p *port) prt() bool {
	if !p.selected || p.updtInfo {
		return false
	}
	if s, ok := p.newRole(); ok {
		p.enterPrt(s)
		return true
	}
	b := p.b
	switch p.prtState {
	case prtDisablePort:
		if !p.learning && !p.forwarding {
			p.enterPrt(prtDisabledPort)
			return true
		}
	case prtDisabledPort:
		if p.fdWhile != p.maxAge() || p.sync || p.reRoot || !p.synced {
			p.enterPrt(prtDisabledPort)
			return true
		}
	case prtRootPort:
		return p.rootPort()
	case prtDesignatedPort:
		return p.designatedPort()
	case prtBlockPort:
		if !p.learning && !p.forwarding {
			p.enterPrt(prtAlternatePort)
			return true
		}
	case prtAlternatePort:
		switch {
		case p.rbWhile != 2*p.helloTime() && p.role == RoleBackup: // BACKUP_PORT
			p.rbWhile = 2 * p.helloTime()
		case p.fdWhile != p.forwardDelay() || p.sync || p.reRoot || !p.synced:
		case p.proposed && !p.agree: // ALTERNATE_PROPOSED
			b.setSyncTree()
			p.proposed = false
		case b.allSynced() && !p.agree || p.proposed && p.agree: // ALTERNATE_AGREED
			p.proposed = false
			p.agree = true
			p.newInfo = true
		default:
			return false
		}
		return p.back(prtAlternatePort)
	}
	return false
}

func (p *port) rootPort() bool {
	b := p.b
	timeToLearn := p.fdWhile == 0 || p.reRooted() && p.rbWhile == 0 && b.rstpVersion()
	switch {
	case p.rrWhile != p.fwdDelay():
	case p.reRoot && p.forward: // REROOTED
		p.reRoot = false
	case timeToLearn && !p.learn: // ROOT_LEARN
		p.fdWhile = p.forwardDelay()
		p.learn = true
	case timeToLearn && p.learn && !p.forward: // ROOT_FORWARD
		p.fdWhile = 0
		p.forward = true
	case p.proposed && !p.agree: // ROOT_PROPOSED
		b.setSyncTree()
		p.proposed = false
	case b.allSynced() && !p.agree || p.proposed && p.agree: // ROOT_AGREED
		p.proposed, p.sync = false, false
		p.agree = true
		p.newInfo = true
	case !p.forward && !p.reRoot: // REROOT
		b.setReRootTree()
	default:
		return false
	}
	return p.back(prtRootPort)
}

func (p *port) designatedPort() bool {
	mayAdvance := (p.fdWhile == 0 || p.agreed || p.operEdge) && (p.rrWhile == 0 || !p.reRoot) && !p.sync
	switch {
	case (p.sync && !p.synced || p.reRoot && p.rrWhile != 0 || p.disputed) && !p.operEdge && (p.learn || p.forward): // DESIGNATED_DISCARD
		p.learn, p.forward, p.disputed = false, false, false
		p.fdWhile = p.forwardDelay()
	case mayAdvance && !p.learn: // DESIGNATED_LEARN
		p.learn = true
		p.fdWhile = p.forwardDelay()
	case mayAdvance && p.learn && !p.forward: // DESIGNATED_FORWARD
		p.forward = true
		p.fdWhile = 0
		p.agreed = p.sendRSTP
	case !p.forward && !p.agreed && !p.proposing && !p.operEdge: // DESIGNATED_PROPOSE
		p.proposing = true
		p.edgeDelayWhile = p.edgeDelay()
		p.newInfo = true
	case !p.learning && !p.forwarding && !p.synced || p.agreed && !p.synced ||
		p.operEdge && !p.synced || p.sync && p.synced: // DESIGNATED_SYNCED
		p.rrWhile = 0
		p.synced = true
		p.sync = false
	case p.rrWhile == 0 && p.reRoot: // DESIGNATED_RETIRED
		p.reRoot = false
	default:
		return false
	}
	return p.back(prtDesignatedPort)
}

// Port State Transition (17.30). Env hears of each change before the
// machines go on, which is what the standard's enable and disable
// procedures require.

func (p *port) enterPstDiscarding() {
	p.pstState = pstDiscarding
	p.learning, p.forwarding = false, false
	p.report()
}

func (p *port) pst() bool {
	switch p.pstState {
	case pstDiscarding:
		if p.learn {
			p.pstState, p.learning = pstLearning, true
			p.report()
			return true
		}
	case pstLearning:
		if !p.learn {
			p.enterPstDiscarding()
			return true
		}
		if p.forward {
			p.pstState, p.forwarding = pstForwarding, true
			p.report()
			return true
		}
	case pstForwarding:
		if !p.forward {
			p.enterPstDiscarding()
			return true
		}
	}
	return false
}

// Topology Change (17.31). DETECTED, NOTIFIED_TCN, NOTIFIED_TC,
// PROPAGATING and ACKNOWLEDGED go on to ACTIVE unconditionally. The
// forwarding process flushes at once, so fdbFlush is never left set.

func (p *port) enterTcmInactive() {
	p.tcmState = tcmInactive
	p.flush()
	p.tcWhile = 0
	p.tcAck = false
}

func (p *port) enterTcmLearning() {
	p.tcmState = tcmLearning
	p.rcvdTc, p.rcvdTcn, p.rcvdTcAck = false, false, false
	p.tcProp = false
}

func (p *port) flush() { p.b.env.Flush(p.number) }

func (p *port) tcm() bool {
	rootOrDesignated := p.role == RoleRoot || p.role == RoleDesignated
	news := p.rcvdTc || p.rcvdTcn || p.rcvdTcAck || p.tcProp
	switch p.tcmState {
	case tcmInactive:
		if p.learn {
			p.enterTcmLearning()
			return true
		}
	case tcmLearning:
		switch {
		case rootOrDesignated && p.forward && !p.operEdge: // DETECTED
			p.newTcWhile()
			p.setTcPropTree()
			p.newInfo = true
			p.b.topologyChanges++
			p.tcmState = tcmActive
		case !rootOrDesignated && !(p.learn || p.learning) && !news:
			p.enterTcmInactive()
		case news:
			p.enterTcmLearning()
		default:
			return false
		}
		return true
	case tcmActive:
		switch {
		case !rootOrDesignated || p.operEdge:
			p.enterTcmLearning()
		case p.rcvdTcn: // NOTIFIED_TCN, then NOTIFIED_TC
			p.newTcWhile()
			p.notifiedTc()
		case p.rcvdTc:
			p.notifiedTc()
		case p.tcProp && !p.operEdge: // PROPAGATING
			p.newTcWhile()
			p.flush()
			p.tcProp = false
		case p.rcvdTcAck: // ACKNOWLEDGED
			p.tcWhile = 0
			p.rcvdTcAck = false
		default:
			return false
		}
		return true
	}
	return false
}

func (p *port) notifiedTc() {
	p.rcvdTcn, p.rcvdTc = false, false
	if p.role == RoleDesignated {
		p.tcAck = true
	}
	p.setTcPropTree()
	p.b.topologyChanges++
}
