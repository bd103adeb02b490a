package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/need"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const metricsStore = "../../testdata/stores/queues/store"

// parseMetrics parses text with the Prometheus text parser.
func parseMetrics(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err, "the output does not parse as the Prometheus text format:\n%s", text)
	return mfs
}

// labelOf is the value of label name of m ("" if none).
func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// pinnedByDestination is what holders --json says each destination keeps:
// the bytes of the pinned files one of whose reasons (pending messages, a
// durable subscription) names it, each file once a destination.
func pinnedByDestination(t *testing.T, args ...string) map[string]int64 {
	t.Helper()
	out, errOut, code := runCLI(t, append([]string{"holders", "--json"}, args...)...)
	require.Equal(t, exitOK, code, errOut)
	var doc holdersOut
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	want := map[string]int64{}
	for _, f := range doc.Files {
		seen := map[string]bool{}
		for _, r := range f.Reasons {
			d, _ := r["destination"].(string)
			k := r["kind"]
			if d == "" || seen[d] || (k != "pending-messages" && k != "subscription") {
				continue
			}
			seen[d] = true
			want[d] += f.Bytes
		}
	}
	return want
}

func TestMetricsGolden(t *testing.T) {
	cache := t.TempDir()
	out, errOut, code := runCLI(t, "metrics", "--cache-dir", cache, "--label", "store=fixture", metricsStore)
	require.Equal(t, exitOK, code, errOut)
	golden(t, "metrics-queues", out)

	mfs := parseMetrics(t, out)
	for name, mf := range mfs {
		assert.True(t, strings.HasPrefix(name, "kahafs_"), name)
		assert.Equal(t, dto.MetricType_GAUGE, mf.GetType(), name)
		for _, m := range mf.GetMetric() {
			assert.Equal(t, "fixture", labelOf(m, "store"), name)
		}
	}
	want := pinnedByDestination(t, "--cache-dir", cache, metricsStore)
	require.NotEmpty(t, want)
	got := map[string]int64{}
	for _, m := range mfs["kahafs_destination_pinned_bytes"].GetMetric() {
		if v := int64(m.GetGauge().GetValue()); v > 0 {
			got[labelOf(m, "destination")] = v
		}
	}
	assert.Equal(t, want, got)

	// the totals are holders' totals
	hout, _, _ := runCLI(t, "holders", "--json", "--cache-dir", cache, metricsStore)
	var doc holdersOut
	require.NoError(t, json.Unmarshal([]byte(hout), &doc))
	one := func(name string) int64 {
		ms := mfs[name].GetMetric()
		require.Len(t, ms, 1, name)
		return int64(ms[0].GetGauge().GetValue())
	}
	assert.Equal(t, doc.Totals.All.Bytes, one("kahafs_journal_bytes"))
	assert.Equal(t, int64(doc.Totals.Pinned.Files), one("kahafs_pinned_files"))
	assert.Equal(t, doc.Totals.Pinned.Bytes, one("kahafs_pinned_bytes"))
	assert.Equal(t, doc.Totals.NextCleanupFrees, one("kahafs_next_cleanup_free_bytes"))
}

func TestMetricsOutputFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "kahafs.prom")
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o644))
	out, errOut, code := runCLI(t, "metrics", "--no-cache", "--output", p, metricsStore)
	require.Equal(t, exitOK, code, errOut)
	assert.Empty(t, out)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	stdout, _, _ := runCLI(t, "metrics", "--no-cache", metricsStore)
	assert.Equal(t, stdout, string(b))
	parseMetrics(t, string(b))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "the temporary file is left behind")

	_, _, code = runCLI(t, "metrics", "--no-cache", "--output", filepath.Join(dir, "missing", "x.prom"), metricsStore)
	assert.Equal(t, exitError, code)
}

// TestMetricsWarm: a second run on an unchanged store answers from the
// side file kept with the analysis cache (stderr says so) and writes the
// same file, per store of a layout too; with --compaction the figure is
// worked out once, then kept.
func TestMetricsWarm(t *testing.T) {
	layout := brokertest.CopyTree(t, "../../testdata/stores/mkahadb/data")
	require.NoError(t, filepath.WalkDir(layout, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, brokertest.Past, brokertest.Past) // old enough for the cache to trust
	}))
	for _, src := range []string{brokertest.AgedCopy(t, metricsStore), layout} {
		cache, dir := t.TempDir(), t.TempDir()
		want, _, code := runCLI(t, "metrics", "--no-cache", "--label", "store=b1", src)
		require.Equal(t, exitOK, code)
		for i, flags := range [][]string{nil, nil, {"--compaction"}, {"--compaction"}} {
			p := filepath.Join(dir, "kahafs.prom")
			args := append([]string{"metrics", "--cache-dir", cache, "--label", "store=b1", "--output", p}, flags...)
			_, errOut, code := runCLI(t, append(args, src)...)
			require.Equal(t, exitOK, code, errOut)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			if len(flags) == 0 {
				assert.Equal(t, want, string(b), "run %d", i)
			} else {
				assert.Contains(t, string(b), "kahafs_compaction_reclaimable_bytes", "run %d", i)
			}
			kept := strings.Count(errOut, "cache: hit (no journal bytes read; the metrics kept with the analysis)")
			if i == 1 || i == 3 {
				assert.Positive(t, kept, "run %d: %s", i, errOut)
				assert.NotContains(t, errOut, "miss", "run %d", i)
			} else {
				assert.Zero(t, kept, "run %d: %s", i, errOut)
			}
		}
	}
}

func TestMetricsLabels(t *testing.T) {
	for _, bad := range []string{"store", "destination=x", "store_dir=x", "1x=y", "__x=y", "a-b=c"} {
		_, errOut, code := runCLI(t, "metrics", "--no-cache", "--label", bad, metricsStore)
		assert.Equal(t, exitError, code, bad)
		assert.Contains(t, errOut, "label", bad)
	}
	_, errOut, code := runCLI(t, "metrics", "--no-cache", "--label", "a=1", "--label", "a=2", metricsStore)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "twice")
}

// TestMetricsLayout: on a broker data directory each store's metrics are
// labelled with its directory, the job scheduler's (its own model: files
// and jobs) too.
func TestMetricsLayout(t *testing.T) {
	root := "../../testdata/stores/mkahadb/data"
	out, errOut, code := runCLI(t, "metrics", "--no-cache", "--label", "store=b1", root)
	require.Equal(t, exitOK, code, errOut)
	mfs := parseMetrics(t, out)
	var layout struct {
		Stores map[string][]int `json:"stores"`
	}
	b, err := os.ReadFile("../../testdata/stores/mkahadb/layout.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &layout))
	files := map[string]int{}
	for _, m := range mfs["kahafs_journal_files"].GetMetric() {
		files[labelOf(m, "store_dir")] = int(m.GetGauge().GetValue())
		assert.Equal(t, "b1", labelOf(m, "store"))
	}
	analysed := map[string]float64{}
	for _, m := range mfs["kahafs_store_analysed"].GetMetric() {
		analysed[labelOf(m, "store_dir")] = m.GetGauge().GetValue()
	}
	for dir, ids := range layout.Stores {
		// every store, the job scheduler's too (its own model)
		assert.Equal(t, 1.0, analysed[dir], dir)
		assert.Equal(t, len(ids), files[dir], dir)
	}
	assert.Len(t, analysed, len(layout.Stores))
	jobs := mfs["kahafs_scheduled_jobs"].GetMetric()
	require.Len(t, jobs, 1)
	assert.Equal(t, "scheduler", labelOf(jobs[0], "store_dir"))
	assert.Equal(t, 1.0, jobs[0].GetGauge().GetValue(), "the fixture schedules one message a day ahead")
	want := pinnedByDestination(t, "--no-cache", "../../testdata/stores/mkahadb/data/mKahaDB/queue#3a#2f#2fORDERS.#3e")
	got := map[string]int64{}
	for _, m := range mfs["kahafs_destination_pinned_bytes"].GetMetric() {
		if labelOf(m, "store_dir") == "mKahaDB/queue#3a#2f#2fORDERS.#3e" && m.GetGauge().GetValue() > 0 {
			got[labelOf(m, "destination")] = int64(m.GetGauge().GetValue())
		}
	}
	assert.Equal(t, want, got)
}

// freePort is a free TCP port on the loopback interface.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startDaemon starts name with args, stopped (killed and waited for) at
// the end of the test; its output goes to a file shown on failure.
func startDaemon(t *testing.T, path string, args ...string) {
	t.Helper()
	logf, err := os.Create(filepath.Join(t.TempDir(), filepath.Base(path)+".log"))
	require.NoError(t, err)
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("%s output:\n%s", path, b)
		}
		logf.Close()
	})
}

// TestMetricsPrometheus: Debian's node_exporter reads the file `metrics
// --output` writes with its textfile collector, Debian's prometheus
// scrapes node_exporter, and a PromQL query over prometheus' HTTP API
// gives the pinned bytes per destination holders gives.
func TestMetricsPrometheus(t *testing.T) {
	exporter, err := exec.LookPath("prometheus-node-exporter")
	if err != nil {
		need.Skip(t, "prometheus-node-exporter is not installed (apt-get install prometheus-node-exporter)")
	}
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		need.Skip(t, "prometheus is not installed (apt-get install prometheus)")
	}
	textDir := t.TempDir()
	_, errOut, code := runCLI(t, "metrics", "--no-cache", "--label", "store=fixture", "--output", filepath.Join(textDir, "kahafs.prom"), metricsStore)
	require.Equal(t, exitOK, code, errOut)

	exPort, promPort := freePort(t), freePort(t)
	startDaemon(t, exporter, "--collector.disable-defaults", "--collector.textfile",
		"--collector.textfile.directory="+textDir, fmt.Sprintf("--web.listen-address=127.0.0.1:%d", exPort))
	cfgDir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n", exPort)
	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, "prometheus.yml"), []byte(cfg), 0o644))
	startDaemon(t, prom, "--config.file="+filepath.Join(cfgDir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(cfgDir, "tsdb"), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort))

	want := pinnedByDestination(t, "--no-cache", metricsStore)
	require.NotEmpty(t, want)
	q := url.Values{"query": {`kahafs_destination_pinned_bytes{store="fixture"} > 0`}}
	api := fmt.Sprintf("http://127.0.0.1:%d/api/v1/query?%s", promPort, q.Encode())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got map[string]int64
	var last string
	for ctx.Err() == nil {
		got, last = queryPinned(ctx, api)
		if len(got) >= len(want) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	require.Equal(t, want, got, "prometheus' answer (the last): %s", last)
}

// queryPinned asks prometheus' HTTP API for api (an instant query) and
// returns the value of each series by its destination label, and the body.
func queryPinned(ctx context.Context, api string) (map[string]int64, string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if json.Unmarshal(b, &r) != nil || r.Status != "success" {
		return nil, string(b)
	}
	got := map[string]int64{}
	for _, s := range r.Data.Result {
		v, _ := s.Value[1].(string)
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, string(b)
		}
		got[s.Metric["destination"]] = int64(n)
	}
	return got, string(b)
}
