package main

import (
	"os"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/domain"
)

// TestReadmeIsCurrent fails when the README's permission table differs
// from the one generated from the domain matrix: run `go generate ./domain/`.
func TestReadmeIsCurrent(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := render(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	if string(readme) != want {
		t.Error("README.md's generated tables (permissions, settings) are stale: run `go generate ./domain/ ./config/` and commit README.md")
	}
}

func TestSectionCoversEveryPermissionAndRole(t *testing.T) {
	s := section()
	for _, p := range domain.AllPermissions() {
		if !strings.Contains(s, "| `"+string(p)+"` |") {
			t.Errorf("permission %s is missing from the table", p)
		}
	}
	// ADMIN holds every permission: one tick per row in its column at least.
	if got, want := strings.Count(s, "✓"), len(domain.AllPermissions()); got < want {
		t.Errorf("%d ticks, want at least %d", got, want)
	}
}

func TestSplice(t *testing.T) {
	const begin, end = "<!-- b -->", "<!-- /b -->"
	got, err := splice("a\n"+begin+"\nold\n"+end+"\nz", begin, end, "new\n")
	if err != nil || got != "a\n"+begin+"\nnew\n"+end+"\nz" {
		t.Errorf("splice = %q, %v", got, err)
	}
	if _, err := splice("no markers", begin, end, "x"); err == nil {
		t.Error("splice without markers: want an error")
	}
}

// TestSettingsSectionHasEverySetting: one row per setting, with its names.
func TestSettingsSectionHasEverySetting(t *testing.T) {
	s := settingsSection()
	if got, want := strings.Count(s, "\n| "), len(config.Settings)+1; got != want {
		t.Errorf("%d rows (with the header), want %d", got, want)
	}
	for _, st := range config.Settings {
		for _, n := range []string{st.Key, st.Env, st.Flag} {
			if n != "" && !strings.Contains(s, n+"`") {
				t.Errorf("%s missing", n)
			}
		}
	}
}
