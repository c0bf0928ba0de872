package console

import (
	"strings"
	"testing"
)

// TestArguments: the Approvals page shows every argument, in canonical
// order, strings as text, long values folded (never cut), and control or
// format characters (a right-to-left override, a zero-width space, a bell)
// as escapes, so that nothing reads otherwise than it runs.
func TestArguments(t *testing.T) {
	long := strings.Repeat("ab", 150)
	tests := []struct {
		name string
		in   string
		want []argument
	}{
		{"strings, numbers, objects in order", `{"env":"prod","n":1.5,"opts":{"a":[true,null]}}`, []argument{
			{Name: "env", Value: "prod", Chars: 4, Text: true},
			{Name: "n", Value: "1.5", Chars: 3},
			{Name: "opts", Value: "{\n  \"a\": [\n    true,\n    null\n  ]\n}", Chars: 35},
		}},
		{"a long string folds", `{"data":"` + long + `"}`, []argument{{Name: "data", Value: long, Folded: true, Preview: long[:previewLen], Chars: 300, Text: true}}},
		{"many lines fold", `{"text":"1\n2\n3\n4\n5\n6\n7"}`, []argument{{Name: "text", Value: "1\n2\n3\n4\n5\n6\n7", Folded: true, Preview: "1", Chars: 13, Text: true}}},
		{"hidden characters escaped", `{"path":"/tmp/\u202etxt.exe\u200b\u0007"}`, []argument{{Name: "path", Value: `/tmp/\u202Etxt.exe\u200B\u0007`, Chars: 30, Text: true}}},
		{"a name with markup is data", `{"<b>":"x"}`, []argument{{Name: "<b>", Value: "x", Chars: 1, Text: true}}},
		{"none", `{}`, nil},
		{"not an object: shown whole", `[1,2]`, []argument{{Value: "[\n  1,\n  2\n]", Chars: 12}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := arguments([]byte(tt.in))
			if len(got) != len(tt.want) {
				t.Fatalf("arguments(%s) = %+v, want %+v", tt.in, got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("arguments(%s)[%d] = %+v, want %+v", tt.in, i, got[i], tt.want[i])
				}
			}
		})
	}
}
