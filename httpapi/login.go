package httpapi

// The console's login, for a broker whose console listener is a SASL one
// (Config.SASLMechanism): the browser sends HTTP Basic credentials, and
// the console talks to Kafka as that user, with a client of the user's
// own authenticating with the listener's SASL mechanism. So the console
// can do what the user may do, and the broker's authorization decides.

import (
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/admin"
)

// maxLogins bounds the users' clients kept; the least recently used goes.
const maxLogins = 32

// loginClient is the Kafka client of one user.
type loginClient struct {
	c    *admin.Client
	used time.Time
}

// userClientLocked is cl with a login. Caller holds a.mu.
func (a *api) userClientLocked(r *http.Request) (*admin.Client, error) {
	user, pass, ok := r.BasicAuth()
	if !ok || user == "" {
		return nil, errLogin
	}
	key := admin.LoginKey(user, pass)
	if u := a.users[key]; u != nil {
		u.used = time.Now()
		return u.c, nil
	}
	m, err := admin.SASL(a.mechanism, user, pass)
	if err != nil {
		return nil, err
	}
	c, err := admin.New([]string{a.bootstrap}, kgo.SASL(m), kgo.ClientID("samsa-console"))
	if err != nil {
		return nil, err
	}
	if len(a.users) >= maxLogins {
		oldest := admin.Oldest(a.users, func(u *loginClient) time.Time { return u.used })
		a.users[oldest].c.Close()
		delete(a.users, oldest)
	}
	a.users[key] = &loginClient{c: c, used: time.Now()}
	return c, nil
}

// forget drops the client of a request's credentials (they were refused).
func (a *api) forget(r *http.Request) {
	user, pass, _ := r.BasicAuth()
	key := admin.LoginKey(user, pass)
	a.mu.Lock()
	defer a.mu.Unlock()
	if u := a.users[key]; u != nil {
		u.c.Close()
		delete(a.users, key)
	}
}

// askLogin answers 401 with a Basic challenge: the browser asks the user.
func askLogin(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Basic realm="samsa console", charset="UTF-8"`)
	writeError(w, http.StatusUnauthorized, errLogin)
}

// requireLogin makes the console's pages ask for the login too, so that
// the browser has the credentials before the page calls the API (which
// checks them, with the cluster).
func (a *api) requireLogin(h http.Handler) http.Handler {
	if a.mechanism == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := r.BasicAuth(); !ok {
			askLogin(w)
			return
		}
		h.ServeHTTP(w, r)
	})
}
