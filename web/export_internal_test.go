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

// TestVisible: control and format characters, separators and bytes that
// are not UTF-8 are shown as escapes; other text as it is.
func TestVisible(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"alice":                 "alice",
		"café ☕ \uFFFD":         "café ☕ \uFFFD",
		"adm\u202Enimda":        `adm\u202Enimda`,
		"a\u200Bb":              `a\u200Bb`,
		"line\nbreak\r\t":       `line\u000Abreak\u000D\u0009`,
		"x\u2028y\u2066z\u2069": `x\u2028y\u2066z\u2069`,
		"bad \xff byte":         `bad \xFF byte`,
		"\x1b[31mred":           `\u001B[31mred`,
	} {
		if got := visible(in); got != want {
			t.Errorf("visible(%q) = %q, want %q", in, got, want)
		}
	}
}
