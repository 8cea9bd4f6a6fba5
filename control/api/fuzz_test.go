package api

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var requestSeeds = []string{
	`{"verb":"list-br"}`,
	`{"verb":"add-port","bridge":"br0","add_port":{"name":"p1","ofport":3,"mode":"copy","queues":2,"netns":"ns1","peer":"eth0","address":"10.0.0.1/24"}}`,
	`{"verb":"add-flows","bridge":"br0","flows":["priority=100,ip,nw_dst=10.0.0.2,actions=output:2","priority=0,actions=NORMAL"]}`,
	`{"verb":"del-flows","bridge":"br0","match":"tcp,tp_dst=80","strict":true}`,
	`{"verb":"trace","bridge":"br0","match":"in_port=1,arp"}` + "\n",
	`{"verb":"set","table":"Bridge","record":"br0","columns":["other_config:forward-bpdu=\"true\""]}`,
	`{"verb":"get","table":"Bridge","record":"br0","columns":["other_config"]}`,
	`{"verb":"rstp-show","bridge":"br0"}`,
	`{"verb":"set-controller","bridge":"br0","targets":["tcp:127.0.0.1","ptcp:6653:[::1]"]}`,
	`{"verb":"set-fail-mode","bridge":"br0","fail_mode":"secure"}`,
	`{"verb":"show"} {"verb":"del-br"}`,
	`{"verb":`,
	`{"verb":"show","surprise":[1,{"a":null}]}`,
	`[1,2,3]`,
	`"\ud800"`,
	``,
}

// FuzzRequest checks that decoding a request from any bytes never panics,
// and that a request it accepts means the same after a round trip through
// the client's encoding.
func FuzzRequest(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, _, err := decodeRequest(bytes.NewReader(data))
		if err != nil {
			return
		}
		// json turns empty lists into absent ones and bad UTF-8 into
		// U+FFFD, so compare encodings from the first re-encoding on.
		first, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("decoded %+v from %q, which does not encode: %v", req, data, err)
		}
		again, _, err := decodeRequest(bytes.NewReader(first))
		if err != nil {
			t.Fatalf("re-encoded request %s does not decode: %v", first, err)
		}
		second, _ := json.Marshal(again)
		if !bytes.Equal(first, second) {
			t.Fatalf("request %q changes on a round trip: %s, then %s", data, first, second)
		}
	})
}

// TestDecodeRequestLimit checks the request size limit, which FuzzRequest's
// small inputs never reach: a request past it is refused by name, one just
// inside it is read.
func TestDecodeRequestLimit(t *testing.T) {
	oversized := `{"verb":"add-flows","flows":["` + strings.Repeat("x", maxRequestSize) + `"]}`
	if _, _, err := decodeRequest(strings.NewReader(oversized)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a request of %d bytes: error %v, want one saying it is larger than the limit", len(oversized), err)
	}
	head := `{"verb":"show","match":"`
	fits := head + strings.Repeat("y", maxRequestSize-len(head)-2) + `"}`
	req, _, err := decodeRequest(strings.NewReader(fits))
	if err != nil || req.Verb != "show" {
		t.Errorf("a request of exactly %d bytes: %+v, %v; want it decoded", len(fits), req.Verb, err)
	}
}
