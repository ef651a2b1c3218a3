// Package web holds CMPay's server-rendered HTML: the GraphQL Playground
// and the admin UI (templ components), their handlers, and the static
// assets they use, embedded in the binary.
package web

import (
	"bytes"
	"compress/gzip"
	"embed"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:generate go run github.com/a-h/templ/cmd/templ generate -log-level warn

// static holds every asset the pages load; nothing comes from another host.
//
//go:embed static
var static embed.FS

// playgroundPrefix is where the Playground's assets are served.
const playgroundPrefix = "/playground/assets/"

func playgroundAsset(name string) string { return path.Join(playgroundPrefix, name) }

// staticFiles serves the files under dir of the embedded tree, and nothing
// else: a folder is not listed (404). A file embedded compressed as
// NAME.gz is served as NAME: as it is, with Content-Encoding: gzip, to a
// client that accepts gzip (every browser), decompressed to one that does
// not. Assets change only with a new binary, so browsers may keep them for
// a day.
func staticFiles(dir string) http.Handler {
	sub, err := fs.Sub(static, path.Join("static", dir))
	if err != nil {
		panic(err) // dir is a constant of this package
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		data, gzipped, ok := readAsset(sub, name)
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Cache-Control", "public, max-age=86400")
		h.Set("Vary", "Accept-Encoding")
		if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
			h.Set("Content-Type", ct)
		}
		if gzipped {
			if acceptsGzip(r) {
				h.Set("Content-Encoding", "gzip")
			} else if data, err = gunzip(data); err != nil {
				http.Error(w, "internal error", http.StatusInternalServerError)
				return
			}
		}
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
	})
}

// readAsset reads the file name of fsys, or its compressed NAME.gz. A name
// that is a folder, or not there, is not an asset.
func readAsset(fsys fs.FS, name string) (data []byte, gzipped, ok bool) {
	if name == "" || name == "." {
		return nil, false, false
	}
	for _, candidate := range []struct {
		file    string
		gzipped bool
	}{{name, false}, {name + ".gz", true}} {
		info, err := fs.Stat(fsys, candidate.file)
		if err != nil || info.IsDir() {
			continue
		}
		data, err := fs.ReadFile(fsys, candidate.file)
		if err != nil {
			return nil, false, false
		}
		return data, candidate.gzipped, true
	}
	return nil, false, false
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.ReplaceAll(params, " ", "") != "q=0" {
			return true
		}
	}
	return false
}

func gunzip(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// Favicon serves GET /favicon.ico, which browsers ask every host for
// whether a page names an icon or not (a 404 on every page otherwise).
// The pages name it too, with <link rel="icon">.
func Favicon() http.Handler {
	return secureHeaders(adminCSP, staticFiles("icon"))
}
