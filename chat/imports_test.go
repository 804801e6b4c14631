// This file holds the import rules that replace line counts: the domain
// stays free of drivers and frameworks, only the Cassandra adapter talks
// to the driver, and nothing but the HTTP layer's own tree and the
// programs that start it import handlers.

package chat_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/killrchat/killrchat"

// goList runs go list from the module root with args and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// under reports whether the package path is dir or a package below it.
func under(path, dir string) bool {
	return path == module+"/"+dir || strings.HasPrefix(path, module+"/"+dir+"/")
}

func TestTheDomainImportsNoDriverNoFramework(t *testing.T) {
	for _, dep := range goList(t, "-deps", "./chat") {
		for _, banned := range []string{"github.com/gocql/", "github.com/labstack/", "github.com/a-h/templ"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("chat depends on %s; the domain imports no database driver, no echo and no templ", dep)
			}
		}
	}
}

// gocqlAllowed is where code, tests included, may import the driver: the
// Cassandra adapter (with store/inspect, which the tools that check the
// database behind the application's back call) and the migration runner.
func gocqlAllowed(path string) bool {
	return under(path, "store") || under(path, "schema")
}

// handlersAllowed is who may import handlers: its own tree, the
// composition root and the end-to-end tools that start the server.
func handlersAllowed(path string) bool {
	return under(path, "handlers") || under(path, "cmd") || under(path, "e2e")
}

// TestImportRules reads every package's imports, its tests' included.
func TestImportRules(t *testing.T) {
	format := "{{.ImportPath}} {{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}"
	for _, line := range goList(t, "-e", "-f", format, "./...") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		for _, imp := range imports {
			if imp == "github.com/gocql/gocql" && !gocqlAllowed(pkg) {
				t.Errorf("%s imports gocql; only store and schema may (tools go through store/inspect)", pkg)
			}
			if under(imp, "handlers") && !handlersAllowed(pkg) {
				t.Errorf("%s imports %s; nothing outside handlers, cmd and e2e imports handlers", pkg, imp)
			}
		}
	}
}

// storeAllowed is who, of the HTTP layer, the application layer, the
// views and Web Push, may import the Cassandra adapter: the wiring of the
// route modules (handlers/routes) alone. The composition root (cmd) hands
// the store to the HTTP core and to handlers/routes; the tools and the
// other adapters are not held to it here.
func storeAllowed(path string) bool {
	bound := under(path, "service") || under(path, "views") || under(path, "push") ||
		(under(path, "handlers") && !under(path, "handlers/routes"))
	return !bound
}

// The HTTP core, a route module, a use case, a view or Web Push names the
// domain's types and the interfaces it declares, never the store's: the
// store is an adapter that only the composition root and the wiring hand
// them.
func TestOnlyTheWiringImportsTheStore(t *testing.T) {
	for _, line := range goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...") {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			if under(imp, "store") && !storeAllowed(fields[0]) {
				t.Errorf("%s imports %s; only handlers/routes (and cmd) may: the others take chat's types and interfaces of their own", fields[0], imp)
			}
		}
	}
}

// The application layer speaks the domain and the interfaces it declares:
// no HTTP framework, no templates, no views, no driver, no handlers.
func TestTheServiceImportsNoFramework(t *testing.T) {
	banned := []string{"github.com/labstack/", "github.com/a-h/templ", "github.com/gocql/",
		module + "/views", module + "/handlers"}
	for _, line := range goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./service/...") {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			for _, b := range banned {
				if strings.HasPrefix(imp+"/", strings.TrimSuffix(b, "/")+"/") {
					t.Errorf("%s imports %s; the application layer imports no echo, templ, views, gocql or handlers", fields[0], imp)
				}
			}
		}
	}
	for _, dep := range goList(t, "-deps", "./service") {
		for _, b := range banned {
			if strings.HasPrefix(dep+"/", strings.TrimSuffix(b, "/")+"/") {
				t.Errorf("service depends on %s", dep)
			}
		}
	}
}

// A route module (a package under handlers/, but handlers/routes, which
// wires them) is given the interfaces it declares: it names neither the
// server (no *handlers.Server, embedded or not) nor its DB().
func TestRouteModulesTakeWhatTheyUse(t *testing.T) {
	for _, line := range goList(t, "-f", "{{.ImportPath}} {{.Dir}} {{join .GoFiles \" \"}}", "./handlers/...") {
		fields := strings.Fields(line)
		pkg, dir := fields[0], fields[1]
		if pkg == module+"/handlers" || pkg == module+"/handlers/routes" {
			continue
		}
		for _, name := range fields[2:] {
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "DB" && len(call.Args) == 0 {
						t.Errorf("%s/%s calls DB(); a route module is given the store's part it uses", pkg, name)
					}
				}
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "handlers" && sel.Sel.Name == "Server" {
						t.Errorf("%s/%s names handlers.Server; a route module declares the interfaces it uses", pkg, name)
					}
				}
				return true
			})
		}
	}
}
