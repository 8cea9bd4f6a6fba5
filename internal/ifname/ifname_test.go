package ifname

import (
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	for name, ok := range map[string]bool{
		"br0": true, "abcdefghijklmno": true,
		"": false, "abcdefghijklmnop": false, "a/b": false, "a b": false, "..": false,
		"p%d": false, "p%": false, "p*": false, "p?": false, "p[0]": false, `p\1`: false,
		"\xff\xfe": false, "é": true, "éééééééé": false, // 16 bytes
	} {
		if err := Validate("bridge", name); (err == nil) != ok {
			t.Errorf("Validate(%q) = %v", name, err)
		}
	}
}

func TestValidateNameCountsBytes(t *testing.T) {
	err := Validate("port", "éééééééé")
	if err == nil || !strings.Contains(err.Error(), "16 bytes long, longer than 15") {
		t.Errorf("Validate of 8 two-byte characters = %v; want it to say 16 bytes", err)
	}
}
