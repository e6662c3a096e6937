package deploy_test

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/config"
	"github.com/cofferhq/coffer/server/internal/proctest"
)

// object is a rendered Kubernetes object, with the fields the checks read.
type object struct {
	Kind     string
	Metadata struct {
		Name   string
		Labels map[string]string
	}
	Data map[string]string
	Spec struct {
		Replicas     *int
		MinAvailable *int `yaml:"minAvailable"`
		Selector     yaml.Node
		Ports        []struct {
			Name       string
			Port       int
			TargetPort string `yaml:"targetPort"`
		}
		Template struct {
			Metadata struct{ Labels map[string]string }
			Spec     podSpec
		}
	}
}

type podSpec struct {
	AutomountServiceAccountToken *bool `yaml:"automountServiceAccountToken"`
	SecurityContext              struct {
		RunAsNonRoot *bool  `yaml:"runAsNonRoot"`
		RunAsUser    *int64 `yaml:"runAsUser"`
	} `yaml:"securityContext"`
	Containers     []container
	InitContainers []container `yaml:"initContainers"`
	Volumes        []struct {
		Name   string
		Secret *struct {
			SecretName string `yaml:"secretName"`
		}
		ConfigMap *struct{ Name string } `yaml:"configMap"`
	}
}

type container struct {
	Name, Image string
	Command     []string
	Args        []string
	Env         []struct {
		Name      string
		Value     *string
		ValueFrom *struct {
			SecretKeyRef *struct{ Name, Key string } `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	}
	EnvFrom []struct {
		ConfigMapRef *struct{ Name string } `yaml:"configMapRef"`
		SecretRef    *struct{ Name string } `yaml:"secretRef"`
	} `yaml:"envFrom"`
	Ports []struct {
		Name          string
		ContainerPort int `yaml:"containerPort"`
	}
	StartupProbe   *probe `yaml:"startupProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	Resources      struct {
		Requests map[string]string
		Limits   map[string]string
	}
	SecurityContext struct {
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		Capabilities             struct{ Drop []string }
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path string
		Port string
	} `yaml:"httpGet"`
}

// render runs `kubectl kustomize dir` (or `kustomize build dir`) and decodes every object,
// with its raw YAML.
func render(t *testing.T, dir string) ([]object, []map[string]any) {
	t.Helper()
	// kubectl bundles kustomize; where it is missing, `make test` installs kustomize itself.
	cmd := []string{"kubectl", "kustomize", dir}
	if _, err := exec.LookPath("kubectl"); err != nil {
		cmd = []string{proctest.Need(t, "kustomize", "install kubectl, or `make kustomize`"), "build", dir}
	}
	out, err := exec.CommandContext(t.Context(), cmd[0], cmd[1:]...).Output()
	if err != nil {
		if exit, ok := errors.AsType[*exec.ExitError](err); ok {
			t.Fatalf("%s: %v\n%s", strings.Join(cmd, " "), err, exit.Stderr)
		}
		t.Fatal(err)
	}
	var objs []object
	var raws []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("rendered YAML: %v", err)
		}
		var o object
		var raw map[string]any
		if err := n.Decode(&o); err != nil {
			t.Fatalf("rendered object: %v", err)
		}
		if err := n.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
		raws = append(raws, raw)
	}
	return objs, raws
}

// The ports the containers declare, and the listener each is.
var listeners = map[string]int{"http": 8080, "internal": 9090}

func TestKubernetesManifests(t *testing.T) {
	t.Parallel()
	// The probes' paths must answer 200 on the listener they name: a real process tells.
	app := apptest.Start(t, apptest.Options{})
	urls := map[string]string{"http": app.URL, "internal": app.InternalURL}

	for _, tc := range []struct {
		dir       string
		image     string
		replicas  map[string]int
		extraKind string
	}{
		{"deploy/kubernetes/base", "coffer:latest", map[string]int{"coffer-api": 2, "coffer-worker": 2}, ""},
		{"deploy/kubernetes/overlays/example", "registry.example.com/coffer:v1.0.0", map[string]int{"coffer-api": 3, "coffer-worker": 2}, "Ingress"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			t.Parallel()
			objs, raws := render(t, filepath.Join(repoRoot, tc.dir))
			byKind := map[string]map[string]object{}
			for _, o := range objs {
				if byKind[o.Kind] == nil {
					byKind[o.Kind] = map[string]object{}
				}
				byKind[o.Kind][o.Metadata.Name] = o
			}
			// What a deployment needs, and no Secret: secrets are referenced, never shipped.
			want := map[string][]string{
				"Deployment": {"coffer-api", "coffer-worker"}, "Job": {"coffer-migrate"}, "Service": {"coffer-api", "coffer-internal"},
				"PodDisruptionBudget": {"coffer-api", "coffer-worker"}, "ServiceAccount": {"coffer"},
			}
			for kind, names := range want {
				for _, n := range names {
					if _, ok := byKind[kind][n]; !ok {
						t.Errorf("no %s %s", kind, n)
					}
				}
			}
			if tc.extraKind != "" && len(byKind[tc.extraKind]) == 0 {
				t.Errorf("no %s", tc.extraKind)
			}
			if len(byKind["Secret"]) > 0 {
				t.Error("the manifests ship a Secret: secrets are created from the secret store and only referenced")
			}
			configMaps := map[string]map[string]string{}
			for name, cm := range byKind["ConfigMap"] {
				configMaps[name] = cm.Data
			}

			roles := map[string][]string{
				"coffer-api": {"serve", "--role", "api"}, "coffer-worker": {"serve", "--role", "worker"}, "coffer-migrate": {"migrate"},
			}
			for name, args := range roles {
				o, ok := byKind["Deployment"][name]
				if !ok {
					o = byKind["Job"][name]
				}
				pod := o.Spec.Template.Spec
				if len(pod.Containers) != 1 {
					t.Fatalf("%s: %d containers", name, len(pod.Containers))
				}
				c := pod.Containers[0]
				if !slices.Equal(c.Args, args) || len(c.Command) != 0 {
					t.Errorf("%s runs %v %v, want the image's entrypoint with %v", name, c.Command, c.Args, args)
				}
				checkCommand(t, name, c.Args)
				if len(c.Args) == 3 {
					if err := config.CheckRole(c.Args[2]); err != nil {
						t.Errorf("%s: %v", name, err)
					}
				}
				if c.Image != tc.image {
					t.Errorf("%s runs image %q, want %q", name, c.Image, tc.image)
				}
				if r, ok := tc.replicas[name]; ok && (o.Spec.Replicas == nil || *o.Spec.Replicas != r) {
					t.Errorf("%s: replicas %v, want %d", name, o.Spec.Replicas, r)
				}
				checkPodSecurity(t, name, pod, c)
				checkEnv(t, name, pod, c, configMaps)
				checkProbes(t, name, c, urls)
			}

			// Services and budgets select the pods they mean.
			pods := map[string]map[string]string{}
			for _, name := range []string{"coffer-api", "coffer-worker"} {
				pods[name] = byKind["Deployment"][name].Spec.Template.Metadata.Labels
			}
			selects := func(what string, sel yaml.Node, want ...string) {
				var s struct {
					MatchLabels map[string]string `yaml:"matchLabels"`
				}
				var flat map[string]string
				if err := sel.Decode(&s); err != nil || s.MatchLabels == nil {
					// A Service's selector is the flat map.
					if err := sel.Decode(&flat); err != nil {
						t.Fatalf("%s selector: %v", what, err)
					}
					s.MatchLabels = flat
				}
				var got []string
				for name, labels := range pods {
					match := len(s.MatchLabels) > 0
					for k, v := range s.MatchLabels {
						match = match && labels[k] == v
					}
					if match {
						got = append(got, name)
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("%s selects %v, want %v", what, got, want)
				}
			}
			selects("Service coffer-api", byKind["Service"]["coffer-api"].Spec.Selector, "coffer-api")
			selects("Service coffer-internal", byKind["Service"]["coffer-internal"].Spec.Selector, "coffer-api", "coffer-worker")
			selects("PodDisruptionBudget coffer-api", byKind["PodDisruptionBudget"]["coffer-api"].Spec.Selector, "coffer-api")
			selects("PodDisruptionBudget coffer-worker", byKind["PodDisruptionBudget"]["coffer-worker"].Spec.Selector, "coffer-worker")
			for svc, port := range map[string]string{"coffer-api": "http", "coffer-internal": "internal"} {
				ports := byKind["Service"][svc].Spec.Ports
				if len(ports) != 1 || ports[0].TargetPort != port {
					t.Errorf("Service %s ports %+v, want the pods' %q port", svc, ports, port)
				}
			}
			for name, pdb := range byKind["PodDisruptionBudget"] {
				if pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable < 1 || *pdb.Spec.MinAvailable >= tc.replicas[name] {
					t.Errorf("PodDisruptionBudget %s: minAvailable %v with %d replicas", name, pdb.Spec.MinAvailable, tc.replicas[name])
				}
			}
			checkNoPlaintextSecrets(t, raws)
		})
	}
}

// checkPodSecurity: non-root as the image's user, read-only root, no privilege escalation,
// no capabilities, no service account token, memory and CPU requested and memory limited.
func checkPodSecurity(t *testing.T, name string, pod podSpec, c container) {
	t.Helper()
	sc := pod.SecurityContext
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
		t.Errorf("%s: pod securityContext must set runAsNonRoot and runAsUser 65532 (the image's USER)", name)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("%s: mounts a service account token; coffer calls no Kubernetes API", name)
	}
	csc := c.SecurityContext
	if csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem || csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation ||
		!slices.Equal(csc.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("%s: container securityContext must be readOnlyRootFilesystem, no privilege escalation, drop ALL", name)
	}
	if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" || c.Resources.Limits["memory"] == "" {
		t.Errorf("%s: resources %+v: want cpu and memory requests and a memory limit", name, c.Resources)
	}
}

// secretVars must come from a Secret (a secretKeyRef, or a file on a secret volume).
var secretVars = []string{"DATABASE_URL", "COFFER_OPS_TOKEN", "COFFER_MASTER_KEY", "COFFER_MASTER_KEY_PREVIOUS"}

// checkEnv: every variable the container gets is one coffer reads (config.Entries), secrets
// come by reference, a *_FILE variable names a file on a mounted volume of the right kind, and
// the declared ports are the listeners coffer binds.
func checkEnv(t *testing.T, name string, pod podSpec, c container, configMaps map[string]map[string]string) {
	t.Helper()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.SecretRef != nil {
			t.Errorf("%s: envFrom a whole Secret hides which variables it sets; use secretKeyRef", name)
			continue
		}
		data, ok := configMaps[from.ConfigMapRef.Name]
		if !ok {
			t.Errorf("%s: envFrom ConfigMap %s is not in the manifests", name, from.ConfigMapRef.Name)
		}
		maps.Copy(env, data)
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			env[e.Name] = "<secret>"
		case e.Value != nil:
			env[e.Name] = *e.Value
		default:
			t.Errorf("%s: %s has neither a value nor a secretKeyRef", name, e.Name)
		}
	}
	if env["DATABASE_URL"] == "" {
		t.Errorf("%s: no DATABASE_URL", name)
	}
	for k, v := range env {
		if _, ok := config.EntryOf(k); !ok {
			t.Errorf("%s: %s is not a variable coffer reads (config.Entries)", name, k)
		}
		if slices.Contains(secretVars, k) && v != "<secret>" {
			t.Errorf("%s: %s is given in plain text; reference a Secret (secretKeyRef or a _FILE on a secret volume)", name, k)
		}
	}
	// A file setting must name a file on a volume of its kind.
	kindOf := map[string]string{}
	for _, v := range pod.Volumes {
		switch {
		case v.Secret != nil:
			kindOf[v.Name] = "secret"
		case v.ConfigMap != nil:
			kindOf[v.Name] = "configMap:" + v.ConfigMap.Name
		}
	}
	mountKind := func(file string) string {
		for _, m := range c.VolumeMounts {
			if path.Dir(file) == m.MountPath {
				return kindOf[m.Name]
			}
		}
		return ""
	}
	if name == "coffer-migrate" {
		return // it needs the database only
	}
	if _, direct := env["COFFER_MASTER_KEY"]; direct || env["COFFER_MASTER_KEY_FILE"] == "" {
		t.Errorf("%s: the master key should come as COFFER_MASTER_KEY_FILE from a secret volume", name)
	} else if k := mountKind(env["COFFER_MASTER_KEY_FILE"]); k != "secret" {
		t.Errorf("%s: COFFER_MASTER_KEY_FILE %s is on a %q volume, want a secret", name, env["COFFER_MASTER_KEY_FILE"], k)
	}
	checkChainsFile(t, name, env["COFFER_CHAINS_FILE"], mountKind(env["COFFER_CHAINS_FILE"]), configMaps)
	// The ports the container declares are the listeners coffer binds.
	for _, p := range c.Ports {
		addr := map[string]string{"http": env["COFFER_ADDR"], "internal": env["COFFER_INTERNAL_ADDR"]}[p.Name]
		if listeners[p.Name] != p.ContainerPort || addr != ":"+strconv.Itoa(p.ContainerPort) {
			t.Errorf("%s: port %s %d, listener address %q", name, p.Name, p.ContainerPort, addr)
		}
	}
}

// checkChainsFile: COFFER_CHAINS_FILE is a file of a ConfigMap volume (kind
// "configMap:<name>"), and the chains file there loads.
func checkChainsFile(t *testing.T, name, chains, kind string, configMaps map[string]map[string]string) {
	t.Helper()
	cm, ok := strings.CutPrefix(kind, "configMap:")
	if !ok {
		t.Errorf("%s: COFFER_CHAINS_FILE %s is not on a ConfigMap volume (%q)", name, chains, kind)
		return
	}
	file := filepath.Join(t.TempDir(), "chains.json")
	if err := os.WriteFile(file, []byte(configMaps[cm][path.Base(chains)]), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := chain.LoadFile(file); err != nil {
		t.Errorf("%s: the chains file of ConfigMap %s: %v", name, cm, err)
	}
}

// checkProbes: liveness on /healthz and readiness on /readyz of a port the container
// declares, each answering 200 there on a running coffer.
func checkProbes(t *testing.T, name string, c container, urls map[string]string) {
	t.Helper()
	if name == "coffer-migrate" {
		return
	}
	declared := map[string]bool{}
	for _, p := range c.Ports {
		declared[p.Name] = true
	}
	if strings.HasSuffix(name, "worker") && declared["http"] {
		t.Errorf("%s declares the API port; a worker serves only the internal listener", name)
	}
	for what, p := range map[string]struct {
		probe *probe
		path  string
	}{"liveness": {c.LivenessProbe, "/healthz"}, "readiness": {c.ReadinessProbe, "/readyz"}, "startup": {c.StartupProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: no HTTP %s probe", name, what)
			continue
		}
		g := p.probe.HTTPGet
		if g.Path != p.path || !declared[g.Port] {
			t.Errorf("%s: %s probe %s on port %q, want %s on a declared port", name, what, g.Path, g.Port, p.path)
			continue
		}
		res, err := http.Get(urls[g.Port] + g.Path) //nolint:noctx // a test's one-off request
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s: %s probe GET %s on the %s listener answers %d", name, what, g.Path, g.Port, res.StatusCode)
		}
	}
}

// Values that look like a secret: a URL with a password, 32-byte keys in hex or base64, ops
// tokens and operator keys.
var secretLooking = regexp.MustCompile(`://[^/\s:@]+:[^/\s@]+@|\b[0-9a-fA-F]{64}\b|\b[A-Za-z0-9+/]{43}=|\bops_[A-Za-z0-9]|\bsk_[A-Za-z0-9]`)

// checkNoPlaintextSecrets looks through every string of every object.
func checkNoPlaintextSecrets(t *testing.T, raws []map[string]any) {
	t.Helper()
	var walk func(where string, v any)
	walk = func(where string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(where+"."+k, x)
			}
		case []any:
			for _, x := range v {
				walk(where+"[]", x)
			}
		case string:
			if secretLooking.MatchString(v) {
				t.Errorf("%s looks like a secret in plain text: %q", where, v)
			}
		}
	}
	for _, r := range raws {
		meta, _ := r["metadata"].(map[string]any)
		walk(r["kind"].(string)+"/"+meta["name"].(string), r)
	}
}
