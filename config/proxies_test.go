package config

import (
	"strings"
	"testing"
)

func TestTrustedProxies(t *testing.T) {
	tests := []struct {
		name  string
		in    []string
		want  []string // the parsed prefixes
		wants []string // substrings of the error; none: valid
	}{
		{"none", nil, []string{}, nil},
		{"CIDRs and addresses", []string{"10.0.0.0/8", " 192.168.1.7 ", "fd00::/8", "::1"}, []string{"10.0.0.0/8", "192.168.1.7/32", "fd00::/8", "::1/128"}, nil},
		{"host bits are masked", []string{"10.1.2.3/16"}, []string{"10.1.0.0/16"}, nil},
		{"IPv4-mapped written as IPv4", []string{"::ffff:10.0.0.0/104"}, []string{"10.0.0.0/8"}, nil},
		{"not an address", []string{"proxy.internal"}, nil, []string{"SERVICE_TRUSTED_PROXIES", "server.trustedProxies", "--trusted-proxies", `"proxy.internal"`}},
		{"bad prefix length", []string{"10.0.0.0/33"}, nil, []string{"SERVICE_TRUSTED_PROXIES", `"10.0.0.0/33"`}},
		{"every IPv4 address", []string{"0.0.0.0/0"}, nil, []string{"SERVICE_TRUSTED_PROXIES", "trusts every address"}},
		{"every IPv6 address", []string{"::/0"}, nil, []string{"trusts every address"}},
		{"every problem named", []string{"x", "10.0.0.0/8", "y"}, nil, []string{`"x"`, `"y"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Defaults()
			c.DataDir = "/data"
			c.Server.TrustedProxies = tt.in
			got, err := c.TrustedProxies()
			verr := c.Validate()
			if len(tt.wants) > 0 {
				if err == nil || verr == nil {
					t.Fatalf("TrustedProxies() = %v, Validate() = %v; want errors", got, verr)
				}
				for _, w := range tt.wants {
					if !strings.Contains(verr.Error(), w) {
						t.Errorf("Validate() = %q, does not mention %s", verr, w)
					}
				}
				return
			}
			if err != nil || verr != nil {
				t.Fatalf("TrustedProxies() error %v, Validate() = %v", err, verr)
			}
			var gs []string
			for _, p := range got {
				gs = append(gs, p.String())
			}
			if strings.Join(gs, ",") != strings.Join(tt.want, ",") {
				t.Errorf("TrustedProxies() = %v, want %v", gs, tt.want)
			}
		})
	}
}

func TestTrustedProxiesFromEnvAndFile(t *testing.T) {
	file := writeFile(t, "server:\n  trustedProxies: [10.0.0.0/8, 172.16.0.0/12]\n")
	c, err := Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Server.TrustedProxies, ","); got != "10.0.0.0/8,172.16.0.0/12" {
		t.Errorf("from file: %q", got)
	}
	c, err = Load(file, map[string]string{"SERVICE_TRUSTED_PROXIES": "192.168.0.0/16,10.1.1.1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Server.TrustedProxies, ","); got != "192.168.0.0/16,10.1.1.1" {
		t.Errorf("env beats file: %q", got)
	}
}
