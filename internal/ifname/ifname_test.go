package ifname

import "testing"

func TestValidateName(t *testing.T) {
	for name, ok := range map[string]bool{
		"br0": true, "abcdefghijklmno": true,
		"": false, "abcdefghijklmnop": false, "a/b": false, "a b": false, "..": false,
	} {
		if err := Validate("bridge", name); (err == nil) != ok {
			t.Errorf("Validate(%q) = %v", name, err)
		}
	}
}
