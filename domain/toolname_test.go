package domain

import "testing"

// TestToolNamesHaveOneCanonicalForm: tool names, patterns and agent tool
// lists are lower-case ASCII; every spelling of one name is the same tool,
// and look-alikes outside the charset are refused rather than folded.
func TestToolNamesHaveOneCanonicalForm(t *testing.T) {
	names := []struct {
		in, want string
		ok       bool
	}{
		{"shell.exec", "shell.exec", true},
		{"SHELL.exec", "shell.exec", true},
		{"Shell.Exec", "shell.exec", true},
		{"fs/Read:v2_x-y", "fs/read:v2_x-y", true},
		{"\u0455hell.exec", "", false},  // Cyrillic dze, looks like s
		{"ｓhell.exec", "", false},       // fullwidth s
		{"shell.exec\u200b", "", false}, // zero-width space
		{"\u212aill", "", false},        // Kelvin sign, folds to k in Unicode
		{"shell exec", "", false},
		{"", "", false},
	}
	for _, tt := range names {
		got, err := CanonicalToolName(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("CanonicalToolName(%q) = %q, %v; want %q, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	if got, err := CanonicalToolPattern("SHELL.*"); err != nil || got != "shell.*" {
		t.Errorf("CanonicalToolPattern(SHELL.*) = %q, %v", got, err)
	}
	// Rules and lists stored before names were canonical still decide alike.
	matches := []struct {
		pattern, name string
		want          bool
	}{
		{"shell.*", "SHELL.exec", true},
		{"SHELL.*", "shell.exec", true},
		{"Shell.Exec", "shell.exec", true},
		{"shell.*", "fs.read", false},
	}
	for _, tt := range matches {
		if got := MatchTool(tt.pattern, tt.name); got != tt.want {
			t.Errorf("MatchTool(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
	rules := []PolicyRule{
		{ID: "a", Effect: EffectAllow, Tool: "*", Scope: ScopeRole, Value: "USER"},
		{ID: "d", Effect: EffectDeny, Tool: "shell.*", Scope: ScopeRole, Value: "USER"},
	}
	for _, tool := range []string{"shell.exec", "SHELL.exec", "Shell.EXEC"} {
		if got := NewPolicyIndex(rules).Evaluate(Subject{Roles: []Role{RoleUser}}, tool); got.Effect != EffectDeny || got.Rule != "d" {
			t.Errorf("Evaluate(deny shell.*, %q) = %+v, want deny by d", tool, got)
		}
	}
	legacy := Limits{Tools: []string{"FS.read"}}
	if !legacy.PermitsTool("fs.read") || legacy.PermitsTool("fs.write") {
		t.Error("a stored agent tool list in another case must permit the same tool and no other")
	}
	if got := legacy.Delegate(Limits{Tools: []string{"fs.read"}}); len(got.Tools) != 1 {
		t.Errorf("Delegate across cases = %+v, want fs.read kept", got)
	}
	if !(Limits{Tools: []string{"fs.read"}}).Within(legacy) {
		t.Error("Within across cases: fs.read is within FS.read")
	}
	if l, err := RequestLimits([]string{"FS.Read", "fs.read"}, ""); err != nil || len(l.Tools) != 1 || l.Tools[0] != "fs.read" {
		t.Errorf("RequestLimits = %+v, %v; want [fs.read]", l, err)
	}
}
