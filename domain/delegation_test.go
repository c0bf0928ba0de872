package domain

import (
	"errors"
	"math/rand"
	"slices"
	"testing"
	"time"
)

var toolUniverse = []string{"fs.read", "fs.write", "git.pull", "git.push", "web.get", "shell.run"}

func randomLimits(r *rand.Rand) Limits {
	var l Limits
	if r.Intn(3) > 0 {
		l.Tools = []string{}
		for _, t := range toolUniverse {
			if r.Intn(2) == 0 {
				l.Tools = append(l.Tools, t)
			}
		}
	}
	l.ReadOnly, l.Approval = r.Intn(3) == 0, r.Intn(3) == 0
	return l
}

// TestDelegateNeverWidens builds random chains from fixed seeds: every
// agent's limits stay within its parent's and within every ancestor's, and
// a tool or an unrestricted run an ancestor lacked never reappears.
func TestDelegateNeverWidens(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewSource(seed))
		root, err := ChildAgent("a0", "s1", nil, randomLimits(r), "alice", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		chain := []Agent{root}
		for depth := 1; depth <= 1+r.Intn(MaxAgentDepth); depth++ {
			parent := chain[len(chain)-1]
			child, err := ChildAgent("a", "s1", &parent, randomLimits(r), "alice", time.Time{})
			if err != nil {
				t.Fatalf("seed %d depth %d: %v", seed, depth, err)
			}
			if child.Depth != depth || child.Parent != parent.ID {
				t.Fatalf("seed %d: got depth %d parent %q, want %d %q", seed, child.Depth, child.Parent, depth, parent.ID)
			}
			for i, anc := range chain {
				if !child.Limits.Within(anc.Limits) {
					t.Fatalf("seed %d: child %+v widens ancestor %d %+v", seed, child.Limits, i, anc.Limits)
				}
				for _, tool := range toolUniverse {
					if child.Limits.PermitsTool(tool) && !anc.Limits.PermitsTool(tool) {
						t.Fatalf("seed %d: tool %s regained", seed, tool)
					}
				}
			}
			chain = append(chain, child)
		}
	}
}

func TestDelegate(t *testing.T) {
	all := Limits{}
	two := Limits{Tools: []string{"fs.read", "git.pull"}}
	tests := []struct {
		name        string
		parent, req Limits
		want        Limits
	}{
		{"all from all", all, all, all},
		{"narrow from all", all, two, two},
		{"inherit list", two, all, two},
		{"intersection", two, Limits{Tools: []string{"git.pull", "shell.run"}}, Limits{Tools: []string{"git.pull"}}},
		{"asking more gets nothing more", two, Limits{Tools: []string{"shell.run"}}, Limits{Tools: []string{}}},
		{"restrictions add up", Limits{ReadOnly: true}, Limits{Approval: true}, Limits{ReadOnly: true, Approval: true}},
		{"restrictions are not dropped", Limits{ReadOnly: true, Approval: true}, all, Limits{ReadOnly: true, Approval: true}},
	}
	for _, tt := range tests {
		got := tt.parent.Delegate(tt.req)
		if !slices.Equal(got.Tools, tt.want.Tools) || (got.Tools == nil) != (tt.want.Tools == nil) || got.ReadOnly != tt.want.ReadOnly || got.Approval != tt.want.Approval {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestWithin(t *testing.T) {
	two := Limits{Tools: []string{"a", "b"}}
	tests := []struct {
		l, p Limits
		want bool
	}{
		{Limits{}, Limits{}, true},
		{Limits{}, two, false},
		{Limits{Tools: []string{"a"}}, two, true},
		{Limits{Tools: []string{"c"}}, two, false},
		{two, Limits{ReadOnly: true}, false},
		{Limits{ReadOnly: true}, Limits{ReadOnly: true}, true},
		{Limits{}, Limits{Approval: true}, false},
	}
	for _, tt := range tests {
		if got := tt.l.Within(tt.p); got != tt.want {
			t.Errorf("%+v.Within(%+v) = %v, want %v", tt.l, tt.p, got, tt.want)
		}
	}
}

func TestRequestLimits(t *testing.T) {
	tests := []struct {
		tools []string
		mode  string
		want  Limits
		err   bool
	}{
		{nil, "", Limits{}, false},
		{[]string{"b", "a", "b"}, "", Limits{Tools: []string{"a", "b"}}, false},
		{[]string{}, "readonly", Limits{Tools: []string{}, ReadOnly: true}, false},
		{nil, "ask", Limits{Approval: true}, false},
		{nil, "auto", Limits{}, false},
		{[]string{"bad tool"}, "", Limits{}, true},
		{nil, "yolo", Limits{}, true},
	}
	for _, tt := range tests {
		got, err := RequestLimits(tt.tools, tt.mode)
		if (err != nil) != tt.err {
			t.Errorf("RequestLimits(%q, %q) err = %v, want error %v", tt.tools, tt.mode, err, tt.err)
			continue
		}
		if !slices.Equal(got.Tools, tt.want.Tools) || (got.Tools == nil) != (tt.want.Tools == nil) || got.ReadOnly != tt.want.ReadOnly || got.Approval != tt.want.Approval {
			t.Errorf("RequestLimits(%q, %q) = %+v, want %+v", tt.tools, tt.mode, got, tt.want)
		}
	}
}

func TestChildAgentErrors(t *testing.T) {
	other := Agent{ID: "x", Session: "s2"}
	if _, err := ChildAgent("a", "s1", &other, Limits{}, "", time.Time{}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("parent of another session: got %v, want ErrInvalidInput", err)
	}
	deep := Agent{ID: "d", Session: "s1", Depth: MaxAgentDepth}
	if _, err := ChildAgent("a", "s1", &deep, Limits{}, "", time.Time{}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("too deep: got %v, want ErrInvalidInput", err)
	}
}
