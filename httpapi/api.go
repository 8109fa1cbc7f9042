package httpapi

import (
	"log/slog"
	"net/http"
)

// api is the console's JSON API.
type api struct {
	bootstrap string
	log       *slog.Logger
}

func newAPI(bootstrap string, log *slog.Logger) *api {
	return &api{bootstrap: bootstrap, log: log}
}

func (a *api) routes(mux *http.ServeMux) {}

func (a *api) close() {}
