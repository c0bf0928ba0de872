package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/config"
)

// TestEveryHelpExitsZero: help is asked for, not a usage error.
func TestEveryHelpExitsZero(t *testing.T) {
	tests := [][]string{
		{"--help"}, {"-h"}, {"help"},
		{"serve", "--help"}, {"serve", "-h"}, {"serve", "--port", "1", "--help"},
		{"policy", "--help"}, {"policy", "can", "--help"},
		{"oidc", "--help"}, {"oidc", "check", "--help"},
	}
	for _, args := range tests {
		var out, errOut bytes.Buffer
		if code := run(args, map[string]string{}, &out, &errOut); code != exitOK || out.Len() == 0 || errOut.Len() != 0 {
			t.Errorf("agentauth %s: exit %d, %d bytes on stdout, stderr %q; want 0, help on stdout, nothing on stderr",
				strings.Join(args, " "), code, out.Len(), errOut.String())
		}
	}
}

// TestHelpListsEverySetting: agentauth --help and serve --help name every
// setting of the one table with its flag, variable, key and default.
func TestHelpListsEverySetting(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}} {
		var out bytes.Buffer
		run(args, map[string]string{}, &out, &bytes.Buffer{})
		help := out.String()
		for _, s := range config.Settings {
			for _, want := range []string{s.Env, s.Key, "Default: " + s.Default + "."} {
				if !strings.Contains(help, want) {
					t.Errorf("agentauth %s: %q of %s missing", strings.Join(args, " "), want, s.Names())
				}
			}
			if s.Flag != "" && !strings.Contains(help, "--"+s.Flag+",") {
				t.Errorf("agentauth %s: flag --%s missing", strings.Join(args, " "), s.Flag)
			}
		}
	}
}
