package httpapi

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed console
var consoleFiles embed.FS

// consoleHandler serves the console's files, embedded in the binary.
func consoleHandler() http.Handler {
	sub, err := fs.Sub(consoleFiles, "console")
	if err != nil {
		panic(err) // the embed's directory is fixed at build time
	}
	return http.FileServerFS(sub)
}
