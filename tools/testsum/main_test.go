package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunCountsEachFormat(t *testing.T) {
	tests := []struct {
		name, format, in string
		exit             string
		want             string // the totals line
		wantOut          []string
		notOut           []string
	}{
		{
			name:   "go: passes, a failure with its output, a skip, subtests counted",
			format: "go",
			in: `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"quiet\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:9: got 1, want 2\n"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"pass","Package":"p","Test":"TestC/sub"}
{"Action":"pass","Package":"p","Test":"TestC"}
{"Action":"skip","Package":"p","Test":"TestD"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.1s\n"}
{"Action":"fail","Package":"p"}
`,
			exit:    "1",
			want:    "s 3 1 1",
			wantOut: []string{"got 1, want 2", "FAIL\tp"},
			notOut:  []string{"quiet"},
		},
		{
			name:   "go: a build failure alone counts one failure",
			format: "go",
			in: `{"ImportPath":"p","Action":"build-output","Output":"p/x.go:1:1: syntax error\n"}
{"ImportPath":"p","Action":"build-fail"}
{"Action":"output","Package":"p","Output":"FAIL\tp [build failed]\n"}
{"Action":"fail","Package":"p","FailedBuild":"p"}
`,
			exit:    "1",
			want:    "s 0 1 0",
			wantOut: []string{"syntax error", "exited 1 with no failed test counted"},
		},
		{
			name:    "go: not JSON is passed through",
			format:  "go",
			in:      "go: updates to go.mod needed\n",
			exit:    "1",
			want:    "s 0 1 0",
			wantOut: []string{"go: updates to go.mod needed"},
		},
		{
			name:    "tap: node's closing counts",
			format:  "tap",
			in:      "TAP version 13\nok 1 - a\nnot ok 2 - b\n# tests 4\n# pass 2\n# fail 1\n# cancelled 0\n# skipped 1\n# todo 0\n",
			exit:    "1",
			want:    "s 2 1 1",
			wantOut: []string{"not ok 2 - b"},
		},
		{
			name:   "line: the last N passed, M failed line",
			format: "line",
			in:     "has x\nhelm: 112 passed, 0 failed\n",
			want:   "s 112 0 0",
		},
		{
			name:   "line: with skipped",
			format: "line",
			in:     "fuzz: 9 passed, 0 failed, 2 skipped\n",
			want:   "s 9 0 2",
		},
		{
			name:   "a runner that crashes before any count",
			format: "line",
			in:     "panic: boom\n",
			exit:   "2",
			want:   "s 0 1 0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			totals := filepath.Join(t.TempDir(), "totals")
			in := filepath.Join(t.TempDir(), "in")
			if err := os.WriteFile(in, []byte(tt.in), 0o644); err != nil {
				t.Fatal(err)
			}
			exit := tt.exit
			if exit == "" {
				exit = "0"
			}
			var out strings.Builder
			args := []string{"-suite", "s", "-format", tt.format, "-totals", totals, "--",
				"sh", "-c", `cat "$1"; exit "$2"`, "sh", in, exit}
			code, err := run(args, &out)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(code) != exit {
				t.Errorf("exit code %d, want %s", code, exit)
			}
			got, err := os.ReadFile(totals)
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(string(got)) != tt.want {
				t.Errorf("totals line = %q, want %q", strings.TrimSpace(string(got)), tt.want)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tt.notOut {
				if strings.Contains(out.String(), w) {
					t.Errorf("output has %q (a passing test's output):\n%s", w, out.String())
				}
			}
		})
	}
}

func TestReportAddsUpAndFailsOnAnyFailure(t *testing.T) {
	tests := []struct {
		name, totals, expect, wantLast string
		wantFailed                     bool
	}{
		{"all green", "go 10 0 2\nhelm 5 0 0\n", "go,helm", "15 passed, 0 failed, 2 skipped", false},
		{"one red suite", "go 10 0 2\ne2e 3 1 0\n", "", "13 passed, 1 failed, 2 skipped", true},
		{"an expected suite missing", "go 10 0 2\n", "go,helm", "10 passed, 1 failed, 2 skipped", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "totals")
			if err := os.WriteFile(f, []byte(tt.totals), 0o644); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			failed, err := report([]string{"-totals", f, "-expect", tt.expect}, &out)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if got := lines[len(lines)-1]; got != tt.wantLast || failed != tt.wantFailed {
				t.Errorf("last line %q failed %v, want %q %v", got, failed, tt.wantLast, tt.wantFailed)
			}
		})
	}
}
