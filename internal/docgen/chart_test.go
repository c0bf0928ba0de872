package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/agentauth/agentauth/config"
)

const (
	chartDir    = "../../deploy/helm/agentauth"
	chartReadme = "../../deploy/helm/README.md"
)

// chartRow is one row of the chart's values table.
type chartRow struct {
	keys     []string
	defaults string
	settings string
}

// chartValuesTable reads the rows between the <!-- chart-values --> markers.
func chartValuesTable(t *testing.T) []chartRow {
	t.Helper()
	b, err := os.ReadFile(chartReadme)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, "<!-- chart-values -->"), strings.Index(s, "<!-- /chart-values -->")
	if i < 0 || j < i {
		t.Fatalf("%s: no <!-- chart-values --> … <!-- /chart-values --> markers", chartReadme)
	}
	codes := regexp.MustCompile("`([^`]*)`")
	var rows []chartRow
	for _, line := range strings.Split(s[i:j], "\n")[3:] { // marker, header, rule
		cells := strings.Split(line, " | ")
		if len(cells) < 4 {
			continue
		}
		var keys []string
		for _, m := range codes.FindAllStringSubmatch(cells[0], -1) {
			keys = append(keys, m[1])
		}
		rows = append(rows, chartRow{keys: keys, defaults: cells[1], settings: cells[2]})
	}
	return rows
}

// valueLeaves lists the dotted keys of values.yaml that hold a scalar, a
// list or an empty map, with the scalar's text.
func valueLeaves(t *testing.T) map[string]*yaml.Node {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]*yaml.Node{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		if n.Kind == yaml.MappingNode && len(n.Content) > 0 {
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := n.Content[i].Value
				if path != "" {
					p = path + "." + p
				}
				walk(n.Content[i+1], p)
			}
			return
		}
		out[path] = n
	}
	walk(doc.Content[0], "")
	return out
}

// TestChartValuesTable: the chart's values table and values.yaml agree
// (every key documented, no row for a key that is gone, scalar defaults
// equal), and every setting the table or the templates name is a setting
// of config.Settings, the table of `agentauth serve --help` and the
// README.
func TestChartValuesTable(t *testing.T) {
	rows := chartValuesTable(t)
	leaves := valueLeaves(t)
	covers := func(key, path string) bool { return path == key || strings.HasPrefix(path, key+".") }
	for path := range leaves {
		found := false
		for _, r := range rows {
			for _, k := range r.keys {
				found = found || covers(k, path)
			}
		}
		if !found {
			t.Errorf("values.yaml key %s is not in the values table of %s", path, chartReadme)
		}
	}
	for _, r := range rows {
		for _, k := range r.keys {
			known := false
			for path := range leaves {
				known = known || covers(k, path)
			}
			if !known && strings.Contains(r.defaults, "`") {
				t.Errorf("the values table documents %s, which values.yaml does not have", k)
			}
		}
		if len(r.keys) == 1 {
			if n, ok := leaves[r.keys[0]]; ok && n.Kind == yaml.ScalarNode {
				want := "`" + n.Value + "`"
				if n.Value == "" && n.Tag == "!!str" {
					want = "`\"\"`"
				}
				if r.defaults != want {
					t.Errorf("%s: the table's default is %s, values.yaml has %s", r.keys[0], r.defaults, want)
				}
			}
		}
	}
	envName := regexp.MustCompile(`\b(SERVICE_[A-Z_]+|NODE_EXTRA_CA_CERTS)\b`)
	isSetting := func(name string) bool {
		for _, s := range config.Settings {
			if s.Env == name {
				return true
			}
		}
		return false
	}
	for _, r := range rows {
		for _, name := range envName.FindAllString(r.settings, -1) {
			if !isSetting(name) {
				t.Errorf("the values table names %s, which is not in config.Settings", name)
			}
		}
	}
	templates, err := filepath.Glob(filepath.Join(chartDir, "templates", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range templates {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range envName.FindAllString(string(b), -1) {
			if !isSetting(name) {
				t.Errorf("%s names %s, which is not in config.Settings", filepath.Base(f), name)
			}
		}
	}
}
