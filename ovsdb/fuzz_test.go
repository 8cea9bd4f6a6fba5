package ovsdb

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"reflect"
	"testing"

	"github.com/xswitch/xswitch/internal/testenv"
)

// FuzzDecodeDatum checks that decoding any input neither panics nor
// yields a datum that does not survive encoding: decode, encode, decode
// gives the same datum and the same bytes. It also reads the input as a
// Port row and as a row update, the decoders a server's messages reach.
func FuzzDecodeDatum(f *testing.F) {
	for _, seed := range []string{`1`, `1.5`, `"s"`, `["set",[]]`, `["set",[1,"a",true]]`,
		`["map",[["k","v"]]]`, `["uuid","0a1b2c3d-0000-4000-8000-000000000001"]`, `["named-uuid","n"]`,
		`{"tag":10,"name":"p1"}`, `{"p":{"modify":{"trunks":["set",[1]]}}}`} {
		f.Add([]byte(seed))
	}
	schema, err := ParseSchema([]byte(`{"name":"d","tables":{"Port":{"columns":{
		"name":{"type":"string"},
		"tag":{"type":{"key":{"type":"integer","minInteger":0,"maxInteger":4095},"min":0,"max":1}},
		"trunks":{"type":{"key":"integer","min":0,"max":"unlimited"}},
		"mode":{"type":{"key":{"type":"string","enum":["set",["a","b"]]},"min":0,"max":1}},
		"options":{"type":{"key":"string","value":"string","min":0,"max":"unlimited"}},
		"ref":{"type":{"key":{"type":"uuid","refTable":"Port"},"min":0,"max":1}}}}}}`))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if d, err := DecodeDatum(data); err == nil {
			enc, err := EncodeDatum(d)
			if err != nil {
				t.Fatalf("%#v decoded from %q does not encode: %v", d, data, err)
			}
			d2, err := DecodeDatum(enc)
			if err != nil {
				t.Fatalf("%s, encoded from %q, does not decode: %v", enc, data, err)
			}
			if !reflect.DeepEqual(d, d2) {
				t.Fatalf("%q decodes to %#v, its encoding %s to %#v", data, d, enc, d2)
			}
			if enc2, _ := EncodeDatum(d2); string(enc2) != string(enc) {
				t.Fatalf("%q encodes as %s, then as %s", data, enc, enc2)
			}
		}
		_, _ = schema.Tables["Port"].DecodeRow(data)
		r := &Replica{schema: schema, tables: map[string]map[UUID]Row{"Port": {}}}
		_ = r.apply(true, data)
		_ = r.apply(false, data)
	})
}

// FuzzClientMessages feeds a Client what a server might send: any stream
// of bytes must end the connection with an error or leave it up, never
// panic. A monitor "m" and a pending request 1 give updates and replies
// somewhere to go.
func FuzzClientMessages(f *testing.F) {
	for _, seed := range []string{
		`{"id":1,"result":["Open_vSwitch"],"error":null}`,
		`{"id":1,"result":null,"error":{"error":"unknown method"}}`,
		`{"id":"echo","method":"echo","params":[]}`,
		`{"id":null,"method":"update2","params":["m",{"Port":{"0a1b2c3d-0000-4000-8000-000000000001":{"insert":{"name":"p1"}}}}]}`,
		`{"id":null,"method":"update","params":["m",{"Port":{"0a1b2c3d-0000-4000-8000-000000000001":{"new":{"tag":3}}}}]}`,
		`{"id":null,"method":"locked","params":["x"]}`,
		`{"id":7,"method":"nosuch","params":[]}`,
		`{"id":99,"result":1,"error":null}`,
	} {
		f.Add([]byte(seed))
	}
	testenv.RequireOVSDB(f)
	schema, err := ReadSchema(testenv.VswitchSchema)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		server, conn := net.Pipe()
		c := NewClient(conn)
		r := &Replica{schema: schema, tables: map[string]map[UUID]Row{"Port": {}}}
		c.monitors[`"m"`] = func(method string, params json.RawMessage) {
			if err := r.apply(method == "update2", params); err != nil {
				c.fail(err)
			}
		}
		c.OnLock(func(string, bool) {})
		go func() { _, _ = io.Copy(io.Discard, server) }()
		errc := make(chan error, 1)
		go func() { errc <- c.Call(context.Background(), "list_dbs", nil, nil) }()
		_, _ = server.Write(data)
		server.Close()
		<-c.Done()
		if c.Err() == nil {
			t.Fatal("Done closed with no error")
		}
		<-errc
	})
}
