package rpc

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestTransportsHoldNoQuery: the transports (this package and the REST layer, tests included)
// import neither the store nor a database driver. A rule or a query they need belongs to the
// service that owns it; a test's fixture goes through apptest.
func TestTransportsHoldNoQuery(t *testing.T) {
	t.Parallel()
	forbidden := []string{"github.com/cofferhq/coffer/server/internal/store", "github.com/jackc/pgx"}
	var files []string
	for _, dir := range []string{".", "../legacy"} {
		found, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, found...)
	}
	if len(files) < 10 {
		t.Fatalf("only %d Go files found: %v", len(files), files)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s imports %s: call the service that owns the rule or query instead", fset.Position(imp.Pos()), path)
				}
			}
		}
	}
}
