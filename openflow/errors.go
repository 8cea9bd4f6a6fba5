package openflow

import "fmt"

// ErrorType is an OFPT_ERROR message's type (ofp_error_type).
type ErrorType uint16

const (
	ErrHelloFailed         ErrorType = 0
	ErrBadRequest          ErrorType = 1
	ErrBadAction           ErrorType = 2
	ErrBadInstruction      ErrorType = 3
	ErrBadMatch            ErrorType = 4
	ErrFlowModFailed       ErrorType = 5
	ErrGroupModFailed      ErrorType = 6
	ErrPortModFailed       ErrorType = 7
	ErrTableModFailed      ErrorType = 8
	ErrQueueOpFailed       ErrorType = 9
	ErrSwitchConfigFailed  ErrorType = 10
	ErrRoleRequestFailed   ErrorType = 11
	ErrMeterModFailed      ErrorType = 12
	ErrTableFeaturesFailed ErrorType = 13
	ErrExperimenter        ErrorType = 0xffff
)

// The codes of each error type, named after the type they belong to.
const (
	HelloFailedIncompatible = 0
	HelloFailedEPERM        = 1

	BadRequestBadVersion      = 0
	BadRequestBadType         = 1
	BadRequestBadMultipart    = 2
	BadRequestBadExperimenter = 3
	BadRequestBadExpType      = 4
	BadRequestEPERM           = 5
	BadRequestBadLen          = 6
	BadRequestBufferEmpty     = 7
	BadRequestBufferUnknown   = 8
	BadRequestBadTableID      = 9
	BadRequestIsSlave         = 10
	BadRequestBadPort         = 11
	BadRequestBadPacket       = 12
	BadRequestBufferOverflow  = 13 // OFPBRC_MULTIPART_BUFFER_OVERFLOW

	BadActionBadType           = 0
	BadActionBadLen            = 1
	BadActionBadExperimenter   = 2
	BadActionBadExpType        = 3
	BadActionBadOutPort        = 4
	BadActionBadArgument       = 5
	BadActionEPERM             = 6
	BadActionTooMany           = 7
	BadActionBadQueue          = 8
	BadActionBadOutGroup       = 9
	BadActionMatchInconsistent = 10
	BadActionUnsupportedOrder  = 11
	BadActionBadTag            = 12
	BadActionBadSetType        = 13
	BadActionBadSetLen         = 14
	BadActionBadSetArgument    = 15

	BadInstructionUnknownInst       = 0
	BadInstructionUnsupInst         = 1
	BadInstructionBadTableID        = 2
	BadInstructionUnsupMetadata     = 3
	BadInstructionUnsupMetadataMask = 4
	BadInstructionBadExperimenter   = 5
	BadInstructionBadExpType        = 6
	BadInstructionBadLen            = 7
	BadInstructionEPERM             = 8

	BadMatchBadType       = 0
	BadMatchBadLen        = 1
	BadMatchBadTag        = 2
	BadMatchBadDlAddrMask = 3
	BadMatchBadNwAddrMask = 4
	BadMatchBadWildcards  = 5
	BadMatchBadField      = 6
	BadMatchBadValue      = 7
	BadMatchBadMask       = 8
	BadMatchBadPrereq     = 9
	BadMatchDupField      = 10
	BadMatchEPERM         = 11

	FlowModFailedUnknown    = 0
	FlowModFailedTableFull  = 1
	FlowModFailedBadTableID = 2
	FlowModFailedOverlap    = 3
	FlowModFailedEPERM      = 4
	FlowModFailedBadTimeout = 5
	FlowModFailedBadCommand = 6
	FlowModFailedBadFlags   = 7

	GroupModFailedGroupExists         = 0
	GroupModFailedInvalidGroup        = 1
	GroupModFailedWeightUnsupported   = 2
	GroupModFailedOutOfGroups         = 3
	GroupModFailedOutOfBuckets        = 4
	GroupModFailedChainingUnsupported = 5
	GroupModFailedWatchUnsupported    = 6
	GroupModFailedLoop                = 7
	GroupModFailedUnknownGroup        = 8
	GroupModFailedChainedGroup        = 9
	GroupModFailedBadType             = 10
	GroupModFailedBadCommand          = 11
	GroupModFailedBadBucket           = 12
	GroupModFailedBadWatch            = 13
	GroupModFailedEPERM               = 14

	PortModFailedBadPort = 0

	TableModFailedBadTable = 0

	SwitchConfigFailedBadFlags = 0
	SwitchConfigFailedBadLen   = 1

	RoleRequestFailedStale   = 0
	RoleRequestFailedUnsup   = 1
	RoleRequestFailedBadRole = 2

	MeterModFailedUnknown      = 0
	MeterModFailedMeterExists  = 1
	MeterModFailedInvalidMeter = 2
	MeterModFailedUnknownMeter = 3
	MeterModFailedBadCommand   = 4
	MeterModFailedBadFlags     = 5
	MeterModFailedBadRate      = 6
	MeterModFailedBadBurst     = 7
	MeterModFailedBadBand      = 8
	MeterModFailedBadBandValue = 9
	MeterModFailedOutOfMeters  = 10
	MeterModFailedOutOfBands   = 11

	TableFeaturesFailedBadTable    = 0
	TableFeaturesFailedBadArgument = 4
	TableFeaturesFailedEPERM       = 5
)

// DecodeError is why a message, or a part of one, was refused: the error
// a switch sends back for it (an OFPT_ERROR with Type and Code and the
// offending message's first bytes), and Reason, for the log.
type DecodeError struct {
	Type   ErrorType
	Code   uint16
	Reason string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("openflow: %s (error type %d, code %d)", e.Reason, e.Type, e.Code)
}

// errorf makes a *DecodeError with a formatted reason.
func errorf(t ErrorType, code uint16, format string, args ...any) *DecodeError {
	return &DecodeError{Type: t, Code: code, Reason: fmt.Sprintf(format, args...)}
}
