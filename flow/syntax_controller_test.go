package flow

import (
	"reflect"
	"testing"
)

// The controller action and the reserved ports CONTROLLER and TABLE, as
// ovs-ofctl parse-flow reads and prints them (OpenFlow 1.0 and 1.3 print
// the same; the corpus has these forms too, and TestOVSCorpus checks them
// against ovs-ofctl itself).
func TestParseControllerAction(t *testing.T) {
	def := Action{Type: ActController, Value: ControllerMaxLen, Table: ReasonAction}
	with := func(change func(a *Action)) Action {
		a := def
		change(&a)
		return a
	}
	tests := []struct {
		in        string
		want      []Action
		canonical string // FormatRule
	}{
		{"actions=CONTROLLER", []Action{def}, "actions=CONTROLLER:65535"},
		{"actions=controller", []Action{def}, "actions=CONTROLLER:65535"},
		{"actions=Controller", []Action{def}, "actions=CONTROLLER:65535"},
		{"actions=controller()", []Action{def}, "actions=CONTROLLER:65535"},
		{"actions=output:CONTROLLER", []Action{def}, "actions=CONTROLLER:65535"},
		{"actions=output:65533", []Action{def}, "actions=CONTROLLER:65535"},
		{"actions=65533", []Action{with(func(a *Action) { a.Value = 0 })}, "actions=CONTROLLER:0"},
		{"actions=CONTROLLER:100", []Action{with(func(a *Action) { a.Value = 100 })}, "actions=CONTROLLER:100"},
		{"actions=controller:0", []Action{with(func(a *Action) { a.Value = 0 })}, "actions=CONTROLLER:0"},
		{"actions=controller(max_len=0x10)", []Action{with(func(a *Action) { a.Value = 16 })}, "actions=CONTROLLER:16"},
		{"actions=controller(reason=action,max_len=65535,id=0)", []Action{def}, "actions=CONTROLLER:65535"},
		{"actions=controller(max_len=10,max_len=20)", []Action{with(func(a *Action) { a.Value = 20 })}, "actions=CONTROLLER:20"},
		{"actions=controller(reason=no_match,max_len=10,id=3)",
			[]Action{with(func(a *Action) { a.Table, a.Value, a.Port = ReasonNoMatch, 10, 3 })},
			"actions=controller(reason=no_match,max_len=10,id=3)"},
		{"actions=controller(id=3,reason=invalid_ttl,max_len=5)",
			[]Action{with(func(a *Action) { a.Table, a.Value, a.Port = ReasonInvalidTTL, 5, 3 })},
			"actions=controller(reason=invalid_ttl,max_len=5,id=3)"},
		{"actions=controller(reason=invalid_ttl)", []Action{with(func(a *Action) { a.Table = ReasonInvalidTTL })}, "actions=controller(reason=invalid_ttl)"},
		{"actions=controller(id=2)", []Action{with(func(a *Action) { a.Port = 2 })}, "actions=controller(id=2)"},
		{"actions=controller(max_len=0,id=2)", []Action{with(func(a *Action) { a.Value, a.Port = 0, 2 })}, "actions=controller(max_len=0,id=2)"},
		{"actions=controller:reason=no_match", []Action{with(func(a *Action) { a.Table = ReasonNoMatch })}, "actions=controller(reason=no_match)"},
		{"actions=controller(reason=no_match),output:1", []Action{with(func(a *Action) { a.Table = ReasonNoMatch }), {Type: ActOutput, Port: 1}},
			"actions=controller(reason=no_match),output:1"},
		{"actions=write_actions(CONTROLLER:20)", []Action{{Type: ActWriteActions, NBits: 1}, with(func(a *Action) { a.Value = 20 })},
			"actions=write_actions(CONTROLLER:20)"},
		{"actions=write_actions(controller)", []Action{{Type: ActWriteActions, NBits: 1}, def}, "actions=write_actions(CONTROLLER:65535)"},
		{"in_port=CONTROLLER,actions=output:1", nil, "in_port=CONTROLLER actions=output:1"},
		{"in_port=65533,actions=output:1", nil, "in_port=CONTROLLER actions=output:1"},
		{"actions=TABLE", []Action{{Type: ActOutput, Port: TablePort}}, "actions=output:TABLE"},
		{"actions=output:TABLE", []Action{{Type: ActOutput, Port: TablePort}}, "actions=output:TABLE"},
		{"actions=65529", []Action{{Type: ActOutput, Port: TablePort}}, "actions=output:TABLE"},
		{"actions=write_actions(TABLE)", []Action{{Type: ActWriteActions, NBits: 1}, {Type: ActOutput, Port: TablePort}}, "actions=write_actions(output:TABLE)"},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.in, testPorts)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tt.in, err)
			continue
		}
		if tt.want != nil && !reflect.DeepEqual(r.Actions, tt.want) {
			t.Errorf("ParseRule(%q).Actions = %+v, want %+v", tt.in, r.Actions, tt.want)
		}
		if got := FormatRule(r); got != tt.canonical {
			t.Errorf("FormatRule(ParseRule(%q)) = %q, want %q", tt.in, got, tt.canonical)
		}
		checkRuleRoundTrip(t, tt.in)
	}
}

func TestParseControllerActionErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"actions=controller:70000", `max_len 70000 out of range`},
		{"actions=controller(max_len=65536)", `controller: max_len 65536 out of range`},
		{"actions=controller(max_len)", `controller: invalid max_len ""`},
		{"actions=controller(id=65536)", `controller: controller id 65536 out of range`},
		{"actions=controller(id=)", `controller: invalid controller id ""`},
		{"actions=controller(reason=foo)", `controller: unknown reason "foo" (want no_match, action or invalid_ttl)`},
		{"actions=controller(reason=action_set)", `controller: unknown reason "action_set" (want no_match, action or invalid_ttl)`},
		{"actions=controller:abc", `controller: unknown key "abc" (want reason=, max_len= or id=)`},
		{"actions=controller:0x10", `controller: unknown key "0x10" (want reason=, max_len= or id=)`},
		{"actions=controller(userdata=01)", `controller: userdata is not supported (reason=, max_len= and id= are)`},
		{"actions=controller(pause)", `controller: pause is not supported (reason=, max_len= and id= are)`},
		{"actions=output(port=CONTROLLER,max_len=100)", `output(port=CONTROLLER,max_len=100): max_len cuts frames to ports, not to CONTROLLER`},
		{"actions=output(port=TABLE,max_len=100)", `output(port=TABLE,max_len=100): max_len cuts frames to ports, not to TABLE`},
		{"actions=write_actions(controller(reason=no_match))", `write_actions: controller(reason=no_match) cannot go into an action set (CONTROLLER:max_len can)`},
		{"actions=write_actions(CONTROLLER,output:1)", `write_actions: an action set holds one action of each kind, and output:1 is the second of its kind`},
		{"in_port=TABLE,actions=drop", `reserved port TABLE is not supported`},
		{"in_port=65529,actions=drop", `port 65529 is one of OpenFlow's reserved ports, of which xswitch has LOCAL (65534) and CONTROLLER (65533)`},
	} {
		_, err := ParseRule(tt.in, testPorts)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseRule(%q) = %v; want %q", tt.in, err, tt.want)
		}
	}
}
