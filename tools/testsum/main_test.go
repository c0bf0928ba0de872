package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
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
			line := strings.TrimSpace(string(got))
			counted, secs, _ := strings.Cut(line, " "+lastField(line))
			if counted != tt.want || secs != "" {
				t.Errorf("totals line = %q, want %q and the wall time", line, tt.want)
			}
			if _, err := strconv.ParseFloat(lastField(line), 64); err != nil {
				t.Errorf("totals line %q: the wall time is not a number of seconds", line)
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
		{"all green", "go 10 0 2 61.0\nhelm 5 0 0 3.2\n", "go,helm", "15 passed, 0 failed, 2 skipped", false},
		{"one red suite", "go 10 0 2 61.0\ne2e 3 1 0 300.4\n", "", "13 passed, 1 failed, 2 skipped", true},
		{"an expected suite missing", "go 10 0 2 61.0\n", "go,helm", "10 passed, 1 failed, 2 skipped", true},
		{"a run with its start noted", "# started 1000\ngo 10 0 0 61.0\n", "go", "10 passed, 0 failed, 0 skipped", false},
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

func lastField(s string) string {
	f := strings.Fields(s)
	return f[len(f)-1]
}

func TestReportShowsEachSuitesTime(t *testing.T) {
	f := filepath.Join(t.TempDir(), "totals")
	if err := start([]string{"-totals", f}); err != nil {
		t.Fatal(err)
	}
	if err := appendTotals(f, "go", counts{Passed: 3, Seconds: 83.4}, 0, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := appendTotals(f, "e2e", counts{Passed: 2, Seconds: 4.3}, 0, io.Discard); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if _, err := report([]string{"-totals", f}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"time", "go                3        0        0     1m23s", "e2e               2        0        0      4.3s", "the whole run"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRunHoldsOutput: with -hold a suite's output reaches the caller in
// one piece at its end, after a line saying it started.
func TestRunHoldsOutput(t *testing.T) {
	totals := filepath.Join(t.TempDir(), "totals")
	var out strings.Builder
	code, err := run([]string{"-suite", "s", "-format", "line", "-hold", "-totals", totals, "--",
		"sh", "-c", "echo first; echo 2 passed, 0 failed"}, &out)
	if err != nil || code != 0 {
		t.Fatalf("run: %d %v", code, err)
	}
	got := out.String()
	started := strings.Index(got, "testsum: suite s started")
	first := strings.Index(got, "first\n2 passed, 0 failed\n")
	ended := strings.Index(got, "testsum: suite s ended in ")
	if started != 0 || first < 0 || ended < first {
		t.Errorf("output:\n%s\nwant the start line, then the suite's lines together, then the end line", got)
	}
}
