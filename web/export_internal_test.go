package web

import "testing"

// TestCell: a cell a spreadsheet would run as a formula gets a leading
// apostrophe, with spaces, no-break spaces, tabs or line breaks before the
// =, +, - or @ too; other text is left as it is.
func TestCell(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"order-1":         "order-1",
		"=SUM(A1)":        "'=SUM(A1)",
		"+1":              "'+1",
		"-1":              "'-1",
		"@x":              "'@x",
		" =cmd|' /C calc": "' =cmd|' /C calc",
		"\u00a0=1+1":      "'\u00a0=1+1",
		"\u3000@x":        "'\u3000@x",
		"  \u00a0 -2":     "'  \u00a0 -2",
		"\n+1":            "'\n+1",
		"\tkey":           "'\tkey",
		"\rkey":           "'\rkey",
		" key":            " key",
		"a=b":             "a=b",
		"":                "",
	} {
		if got := cell(in); got != want {
			t.Errorf("cell(%q) = %q, want %q", in, got, want)
		}
	}
}
