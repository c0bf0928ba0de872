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

// TestCommandLineProblemsComeWithTheRest: an unknown flag does not hide
// the problems of the environment and the other flags.
func TestCommandLineProblemsComeWithTheRest(t *testing.T) {
	var errOut bytes.Buffer
	code := run([]string{"serve", "--prot", "80", "--log-level=loud", "--hots=1", "extra"},
		map[string]string{"SERVICE_PORT": "abc", "HOME": t.TempDir()}, &bytes.Buffer{}, &errOut)
	if code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	for _, want := range []string{
		"--prot is not a flag of agentauth serve", "--hots is not a flag of agentauth serve", `serve takes no arguments, got ["extra"]`,
		`SERVICE_PORT="abc" is not valid: want a port number`, `log.level / SERVICE_LOG_LEVEL / --log-level: "loud" is not one of debug, info, warn, error`,
	} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("missing %q in:\n%s", want, errOut.String())
		}
	}
	if strings.Contains(errOut.String(), "flag provided but not defined") {
		t.Errorf("the flag package's words in:\n%s", errOut.String())
	}
}
