package main

import (
	"os"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/domain"
)

// TestReadmeIsCurrent fails when the README's permission table differs
// from the one generated from the domain matrix: run `go generate ./domain/`.
func TestReadmeIsCurrent(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := splice(string(readme), section())
	if err != nil {
		t.Fatal(err)
	}
	if string(readme) != want {
		t.Error("README.md's permission table is stale: run `go generate ./domain/` and commit README.md")
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
	got, err := splice("a\n"+begin+"\nold\n"+end+"\nz", "new\n")
	if err != nil || got != "a\n"+begin+"\nnew\n"+end+"\nz" {
		t.Errorf("splice = %q, %v", got, err)
	}
	if _, err := splice("no markers", "x"); err == nil {
		t.Error("splice without markers: want an error")
	}
}
