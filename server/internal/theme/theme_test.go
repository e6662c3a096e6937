package theme_test

import (
	"context"
	"os"
	"testing"

	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/theme"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func TestThemesScopeAndResolve(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	box, _ := secret.NewBox(secret.Random(32))
	ops := operator.New(pool, box)
	mk := func(name string) domain.Operator {
		hook := "https://" + name + ".example/hook"
		op, _, err := ops.Create(ctx, domain.OperatorSettings{Name: &name, WebhookURL: &hook})
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	a, b := mk("a"), mk("b")
	s := theme.New(pool)
	team := auth.Admin{}                                                                   // service team: every operator
	adminA := auth.Admin{Admin: domain.Admin{OperatorID: a.ID}, Operators: []string{a.ID}} // operator A's admin
	style := domain.ThemeStyle{PrimaryColor: "#112233", BackgroundColor: "#ffffff", TextColor: "#000000", BorderRadius: 8}

	if _, err := s.Create(ctx, team, "", "dark", "Dark", style); !fault.Is(err, fault.InvalidArgument) {
		t.Fatalf("service team without operator: %v", err)
	}
	dark, err := s.Create(ctx, adminA, "", "dark", "Dark", style)
	if err != nil || dark.OperatorID != a.ID {
		t.Fatalf("create: %+v %v", dark, err)
	}
	if _, err := s.Create(ctx, adminA, "", "dark", "Again", style); !fault.Is(err, fault.Conflict) {
		t.Fatalf("duplicate slug: %v", err)
	}
	if _, err := s.Create(ctx, adminA, b.ID, "x", "X", style); !fault.Is(err, fault.NotFound) {
		t.Fatalf("other operator's theme: %v", err)
	}
	if _, err := s.Create(ctx, team, b.ID, "dark", "B dark", style); err != nil {
		t.Fatalf("same slug for another operator: %v", err)
	}
	if list, _ := s.List(ctx, adminA, ""); len(list) != 1 {
		t.Fatalf("operator admin sees %d themes", len(list))
	}
	if list, _ := s.List(ctx, team, ""); len(list) != 2 {
		t.Fatalf("service team sees %d themes", len(list))
	}
	bThemes, _ := s.List(ctx, team, b.ID)
	if err := s.Delete(ctx, adminA, bThemes[0].ID); !fault.Is(err, fault.NotFound) {
		t.Fatalf("delete other operator's theme: %v", err)
	}
	style.PrimaryColor = "#ff0000"
	if up, err := s.Update(ctx, adminA, dark.ID, "Darker", style); err != nil || up.Style.PrimaryColor != "#ff0000" || up.Name != "Darker" {
		t.Fatalf("update: %+v %v", up, err)
	}

	// Resolve: the slug asked for, else the operator's default, else the built-in look.
	if got, ok, _ := s.Resolve(ctx, a, "dark"); !ok || got.ID != dark.ID {
		t.Fatal("explicit slug")
	}
	if _, ok, _ := s.Resolve(ctx, a, "missing"); ok {
		t.Fatal("unknown slug without default resolved")
	}
	def := "dark"
	a, _ = ops.Update(ctx, a.ID, domain.OperatorSettings{ThemeSlug: &def})
	if got, ok, _ := s.Resolve(ctx, a, "missing"); !ok || got.ID != dark.ID {
		t.Fatal("default theme")
	}
	if got, ok, _ := s.Resolve(ctx, b, "dark"); !ok || got.OperatorID != b.ID {
		t.Fatal("a slug resolves within its own operator")
	}
}
