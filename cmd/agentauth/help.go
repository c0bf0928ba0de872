package main

import (
	"strings"

	"github.com/agentauth/agentauth/config"
)

// wantsHelp reports whether args ask for help anywhere.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help", "help":
			return true
		}
		if a == "--" {
			return false
		}
	}
	return false
}

const serveUsage = `Usage:
  agentauth serve [flags]

Runs the service. The authentication mode follows from the settings: OIDC when
auth.oidc.enabled is true, hybrid when auth.hybrid.remoteUrl is set, debug when
auth.debug is true, API key when an API key is given, else local mode with a key
file in the data folder.

Exit status: 0 after a clean stop (SIGTERM or SIGINT); 2 when the start fails
(every problem listed, each naming its setting: a value, a misspelt SERVICE_*
variable, a key file, the database, a port); 1 when serving fails later.

`

func serveHelp() string { return serveUsage + settingsHelp() }

// settingsHelp lists every setting of config.Settings: its flag,
// environment variable, config key, default, what it does and accepts.
func settingsHelp() string {
	var b strings.Builder
	b.WriteString("Settings (a flag overrides the environment variable, which overrides the config\n")
	b.WriteString("file, which overrides the default; every problem is reported at start):\n\n")
	for _, s := range config.Settings {
		var where []string
		if s.Flag != "" {
			where = append(where, "--"+s.Flag)
		}
		if s.Env != "" {
			where = append(where, s.Env)
		}
		if s.Key != "" {
			where = append(where, s.Key+" (file)")
		}
		b.WriteString("  " + strings.Join(where, ", ") + "\n")
		b.WriteString("      " + s.Help + "\n")
		b.WriteString("      Default: " + s.Default + ". Accepts: " + s.Accepts + ".\n")
	}
	return b.String()
}
