package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/domain"
)

// TestPagesAreCurrent fails when a generated table (permissions, settings)
// differs from what the domain matrix and config.Settings make: run `go
// generate ./domain/ ./config/` and commit the page.
func TestPagesAreCurrent(t *testing.T) {
	pages, err := renderPages("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if p.next != p.old {
			t.Errorf("%s: generated tables are stale: run `go generate ./domain/ ./config/` and commit it", p.path)
		}
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

func TestRenderPagesFindsEachSectionInOnePage(t *testing.T) {
	perm := "<!-- section:permissions -->\nold\n<!-- /section:permissions -->\n"
	set := "<!-- section:settings-table -->\nold\n<!-- /section:settings-table -->\n"
	tests := []struct {
		name    string
		files   map[string]string // path under root → content
		wantErr string
	}{
		{"both in the README", map[string]string{"README.md": perm + set}, ""},
		{"moved to docs pages", map[string]string{"README.md": "# x\n", "docs/api.md": perm, "docs/operators.md": set}, ""},
		{"one missing", map[string]string{"README.md": perm}, "section:settings-table -->: in 0 pages"},
		{"one twice", map[string]string{"README.md": perm + set, "docs/api.md": perm}, "section:permissions -->: in 2 pages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.Mkdir(filepath.Join(root, "docs"), 0o755); err != nil {
				t.Fatal(err)
			}
			for p, c := range tt.files {
				if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			pages, err := renderPages(root)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var all string
			for _, p := range pages {
				all += p.next
			}
			if strings.Contains(all, "\nold\n") || !strings.Contains(all, "| `settings:read` |") {
				t.Errorf("sections not rendered:\n%s", all)
			}
		})
	}
}
