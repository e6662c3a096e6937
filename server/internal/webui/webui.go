// Package webui serves the hosted widget and the management panel: the Vite builds of
// widget/ (committed under dist/, checked fresh by `make check-widget`), embedded in the
// binary so `coffer dev` and `coffer serve` need no Node at run time.
package webui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
)

//go:embed all:dist
var dist embed.FS

// apiMeta is the placeholder in the widget's index.html that carries the API's address: the
// widget may be served from another origin (COFFER_WIDGET_URL) than the API (COFFER_BASE_URL).
const apiMeta = `<meta name="coffer-api" content="" />`

// file is one built file, ready to send: its bytes, their gzip form when that is smaller,
// and a strong ETag.
type file struct {
	body, gz    []byte
	ctype, etag string
}

// app is one built application (widget or panel) under its URL prefix.
type app struct {
	prefix  string // "/widget", "/panel", or "" for the root
	index   file
	assets  map[string]file // by path below the prefix, e.g. "/assets/index-x.js"
	headers map[string]string
}

// Mount serves the widget under the path of widgetURL (the session URL is
// widgetURL + "/?sid=…") and the panel under /panel. baseURL is the API's public address.
func Mount(mux *http.ServeMux, widgetURL, baseURL string) {
	widgetPath := "/widget"
	if u, err := url.Parse(widgetURL); err == nil {
		widgetPath = strings.TrimRight(u.Path, "/")
	}
	connect := "'self'"
	if o := origin(baseURL); o != "" {
		connect += " " + o
	}
	// The widget is embedded in operators' pages: no framing restriction (the spec says so),
	// and no referrer, since its URL carries the session id.
	w := load("widget", widgetPath, map[string]string{
		"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; " +
			"connect-src " + connect + "; base-uri 'none'; form-action 'none'; frame-ancestors *",
		"Referrer-Policy": "no-referrer",
	}, func(index []byte) []byte {
		return bytes.Replace(index, []byte(apiMeta), []byte(`<meta name="coffer-api" content="`+html.EscapeString(baseURL)+`" />`), 1)
	})
	// The panel holds an admin token: it calls only its own origin and may not be framed
	// (clickjacking of the two-step status changes).
	p := load("panel", "/panel", map[string]string{
		"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; " +
			"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
		"Referrer-Policy": "no-referrer",
		"X-Frame-Options": "DENY",
	}, nil)
	for _, a := range []*app{w, p} {
		if a.prefix == "" {
			// A widget URL at a host's root: the index at "/" and its assets below /assets/;
			// every other path stays with the API's 404.
			mux.Handle("GET /{$}", a)
			mux.Handle("GET /assets/", a)
			continue
		}
		mux.Handle("GET "+a.prefix+"/", a)
	}
}

func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

func load(name, prefix string, headers map[string]string, rewriteIndex func([]byte) []byte) *app {
	a := &app{prefix: prefix, assets: map[string]file{}, headers: headers}
	root, err := fs.Sub(dist, "dist/"+name)
	if err != nil {
		panic(err)
	}
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		if p == "index.html" {
			if rewriteIndex != nil {
				b = rewriteIndex(b)
			}
			a.index = newFile(p, b)
			return nil
		}
		a.assets["/"+p] = newFile(p, b)
		return nil
	})
	if err != nil || a.index.body == nil {
		panic("webui: the embedded " + name + " build is missing; run `make widget`")
	}
	return a
}

func newFile(name string, b []byte) file {
	sum := sha256.Sum256(b)
	f := file{body: b, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: mime.TypeByExtension(path.Ext(name))}
	if f.ctype == "" {
		f.ctype = "application/octet-stream"
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	// Writing to memory fails only on a bug in compress/gzip.
	_, _ = zw.Write(b)
	_ = zw.Close()
	if buf.Len() < len(b) {
		f.gz = buf.Bytes()
	}
	return f
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, a.prefix)
	h := w.Header()
	if rest == "/" {
		for k, v := range a.headers {
			h.Set(k, v)
		}
		// The index names the hashed assets of the running build: always revalidate it.
		h.Set("Cache-Control", "no-cache")
		a.send(w, r, a.index)
		return
	}
	f, ok := a.assets[rest]
	if !ok {
		http.NotFound(w, r)
		return
	}
	// Asset names carry a content hash: a name never changes meaning.
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	a.send(w, r, f)
}

func (a *app) send(w http.ResponseWriter, r *http.Request, f file) {
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("ETag", f.etag)
	h.Add("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.body
	if f.gz != nil && acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		body = f.gz
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	w.Write(body) //nolint:errcheck // the client went away
}

func acceptsGzip(r *http.Request) bool {
	for part := range strings.SplitSeq(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			return strings.Trim(strings.ReplaceAll(q, " ", ""), "q=0.") != "" || q == "" // "q=0" refuses
		}
	}
	return false
}
