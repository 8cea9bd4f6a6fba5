package openflow

// PLACEHOLDER so that this branch compiles until the action and
// instruction codec is merged: drop this file then.

func AppendActions(b []byte, as []Action) []byte           { return b }
func DecodeActions(b []byte) ([]Action, error)             { return nil, nil }
func AppendInstructions(b []byte, is []Instruction) []byte { return b }
func DecodeInstructions(b []byte) ([]Instruction, error)   { return nil, nil }
