// Package web holds CMPay's server-rendered HTML: the GraphQL Playground
// and the admin UI (templ components), their handlers, and the static
// assets they use, embedded in the binary.
package web

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
)

//go:generate go run github.com/a-h/templ/cmd/templ generate -log-level warn

// static holds every asset the pages load; nothing comes from another host.
//
//go:embed static
var static embed.FS

// playgroundPrefix is where the Playground's assets are served.
const playgroundPrefix = "/playground/assets/"

func playgroundAsset(name string) string { return path.Join(playgroundPrefix, name) }

// staticFiles serves files under dir of the embedded tree, and never a
// listing of a folder: what the binary holds is nobody's business. Assets
// change only with a new binary, so browsers may keep them for a day.
func staticFiles(dir string) http.Handler {
	sub, err := fs.Sub(static, path.Join("static", dir))
	if err != nil {
		panic(err) // dir is a constant of this package
	}
	files := http.FileServerFS(filesOnly{sub})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		files.ServeHTTP(w, r)
	})
}

// filesOnly is an fs.FS whose folders do not exist: http.FileServer then
// answers 404 where it would list them.
type filesOnly struct{ fs.FS }

func (f filesOnly) Open(name string) (fs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	info, err := file.Stat()
	if err != nil || info.IsDir() {
		_ = file.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return file, nil
}
