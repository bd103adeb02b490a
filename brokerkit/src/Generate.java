import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Generates KahaDB test stores with a real embedded ActiveMQ 5.17 broker.
 *
 * Usage: Generate OUTDIR SCENARIO... | all
 *
 * For every scenario: OUTDIR/SCENARIO/store/ (everything the broker left), OUTDIR/SCENARIO/expected.json,
 * OUTDIR/SCENARIO/records.json (every journal record, as read by ActiveMQ's Journal classes) and
 * OUTDIR/SCENARIO/logs/ (not to be committed; has its own .gitignore).
 * Each scenario's broker runs in a child JVM ("Generate --run SCENARIO DIR"), so a scenario can end with
 * Runtime.halt (crash) and every scenario starts from clean static state. Inspect also runs in a child JVM,
 * on a copy of the store.
 */
public final class Generate {
    private Generate() {}

    public static void main(String[] args) throws Exception {
        if (args.length >= 3 && args[0].equals("--run")) {
            // child JVM: run one scenario's broker work
            int rc = Scenarios.runChild(args[1], new File(args[2]));
            System.exit(rc);
            return;
        }
        if (args.length >= 2 && args[0].equals("--reinspect")) {
            // run Inspect again on existing fixtures, keeping their stores
            for (int i = 1; i < args.length; i++) reinspect(new File(args[i]));
            return;
        }
        if (args.length < 2) {
            System.err.println("usage: Generate OUTDIR SCENARIO...|all   or   Generate --reinspect FIXTURE_DIR...   (scenarios: "
                    + String.join(" ", Scenarios.ALL) + ")");
            System.exit(2);
        }
        File outdir = new File(args[0]).getAbsoluteFile();
        List<String> names = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            if (args[i].equals("all")) names.addAll(Arrays.asList(Scenarios.ALL));
            else if (Arrays.asList(Scenarios.ALL).contains(args[i])) names.add(args[i]);
            else {
                System.err.println("unknown scenario: " + args[i] + " (known: " + String.join(" ", Scenarios.ALL) + ")");
                System.exit(2);
            }
        }
        outdir.mkdirs();
        boolean ok = true;
        Map<String, List<String>> coverage = new TreeMap<>();
        for (String n : names) {
            long t0 = System.currentTimeMillis();
            try {
                List<String> problems = generate(n, new File(outdir, n), coverage);
                for (String p : problems) System.out.println("  PROBLEM: " + p);
                if (!problems.isEmpty()) ok = false;
            } catch (Exception e) {
                ok = false;
                System.out.println("  FAILED: " + e);
                e.printStackTrace(System.out);
            }
            System.out.printf("%s: done in %.1f s%n", n, (System.currentTimeMillis() - t0) / 1000.0);
        }
        int[] wanted = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 16};
        if (names.size() > 1) System.out.println("record type coverage:");
        for (int t : wanted) {
            if (names.size() <= 1) break;
            String tn = org.apache.activemq.store.kahadb.data.KahaEntryType.valueOf(t).name();
            List<String> in = coverage.get(tn);
            System.out.printf("  %2d %-36s %s%n", t, tn, in == null ? "MISSING" : String.join(" ", in));
            if (in == null && names.containsAll(Arrays.asList(Scenarios.ALL))) ok = false;
        }
        System.exit(ok ? 0 : 1);
    }

    static String javaBin() {
        return new File(new File(System.getProperty("java.home"), "bin"), "java").getPath();
    }

    /** Runs "java -cp <our classpath> args..." with output to outFile; returns the exit code. */
    static int fork(File outFile, String... args) throws IOException, InterruptedException {
        return fork(outFile, 0, args);
    }

    /** Exit code of fork when the child ran out of time (it is killed). */
    static final int TIMED_OUT = -1;

    /**
     * Like fork(outFile, args) but kills the child after timeoutMs (0 = no limit) and returns TIMED_OUT.
     */
    static int fork(File outFile, long timeoutMs, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(javaBin());
        cmd.add("-Xmx256m");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.addAll(Arrays.asList(args));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.redirectErrorStream(true);
        pb.redirectOutput(outFile);
        Process p = pb.start();
        if (timeoutMs <= 0) return p.waitFor();
        if (!p.waitFor(timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS)) {
            p.destroyForcibly();
            p.waitFor();
            return TIMED_OUT;
        }
        return p.exitValue();
    }

    static List<String> generate(String name, File sdir, Map<String, List<String>> coverage) throws Exception {
        List<String> problems = new ArrayList<>();
        Scenarios.Cfg cfg = Scenarios.cfg(name);
        Records.deleteTree(sdir);
        File store = new File(sdir, "store");
        File logs = new File(sdir, "logs");
        store.mkdirs();
        logs.mkdirs();
        Files.write(new File(logs, ".gitignore").toPath(), "*\n!.gitignore\n".getBytes(StandardCharsets.UTF_8));

        System.out.println(name + ": running broker (child JVM)...");
        int rc = fork(new File(logs, "child.out"), "Generate", "--run", name, sdir.getPath());
        int expectRc = cfg.halt ? Scenarios.HALT_EXIT_CODE : 0;
        if (rc != expectRc) {
            throw new IOException(name + ": child JVM exited with " + rc + " (expected " + expectRc
                    + "), see " + new File(logs, "child.out") + " and generate.log");
        }
        File runJson = new File(logs, "run.json");
        String run = new String(Files.readAllBytes(runJson.toPath()), StandardCharsets.UTF_8);

        // files as the broker left them
        List<Object> files = new ArrayList<>();
        long total = 0;
        File[] fs = store.listFiles();
        Arrays.sort(fs, (a, b) -> fileOrder(a.getName()) - fileOrder(b.getName()) != 0
                ? fileOrder(a.getName()) - fileOrder(b.getName()) : a.getName().compareTo(b.getName()));
        for (File f : fs) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", f.getName());
            m.put("size", f.length());
            files.add(m);
            total += f.length();
        }

        // independent pass 1: every record, with ActiveMQ's Journal classes
        Records.Result rec = Records.scan(store, cfg.maxLen);
        Files.write(new File(sdir, "records.json").toPath(), Records.toJson(rec).getBytes(StandardCharsets.UTF_8));

        // independent pass 2: what a restarted broker reports (on a copy; Inspect modifies the store), with the
        // index as the broker left it and with the index deleted (rebuilt from the journal): the two can differ
        String inspect = inspectCopy(name, store, cfg.maxLen, logs, "inspect", false);
        String inspectNoIndex = inspectCopy(name, store, cfg.maxLen, logs, "inspect-noindex", true);

        if (cfg.recordMessages) writeMessages(name, sdir, store, logs, cfg.maxLen);

        Map<String, Object> exp = new LinkedHashMap<>();
        exp.put("scenario", name);
        exp.put("description", cfg.description);
        exp.put("activemqVersion", activemqVersion());
        exp.put("journalMaxFileLength", cfg.maxLen);
        exp.put("config", cfg.toMap());
        exp.put("run", new Json.Raw(run));
        exp.put("files", files);
        exp.put("storeBytes", total);
        exp.put("recordCount", rec.records.size());
        exp.put("counts", rec.counts);
        exp.put("inspect", new Json.Raw(inspect));
        exp.put("inspectWithoutIndex", new Json.Raw(inspectNoIndex));
        if (cfg.policies != null) exp.put("brokerView", new Json.Raw(brokerView(name, store, cfg, logs)));
        Files.write(new File(sdir, "expected.json").toPath(), Json.write(exp).getBytes(StandardCharsets.UTF_8));

        problems.addAll(Scenarios.check(name, run, inspect, rec));
        for (String t : rec.counts.keySet()) coverage.computeIfAbsent(t, k -> new ArrayList<>()).add(name);
        System.out.println(name + ": " + fs.length + " files, " + total + " bytes, " + rec.records.size()
                + " records " + rec.counts);
        return problems;
    }

    /**
     * Runs Inspect again on a fixture (with and without the index), keeping its store, and replaces "inspect" and
     * "inspectWithoutIndex" in dir/expected.json: for when Inspect learns to report more, or reports differently.
     */
    @SuppressWarnings("unchecked")
    static void reinspect(File dir) throws Exception {
        File expFile = new File(dir, "expected.json");
        Map<String, Object> exp = (Map<String, Object>) Json.parse(
                new String(Files.readAllBytes(expFile.toPath()), StandardCharsets.UTF_8));
        int maxLen = ((Number) exp.get("journalMaxFileLength")).intValue();
        File logs = new File(dir, "logs");
        logs.mkdirs();
        File store = new File(dir, "store");
        boolean hasIndex = new File(store, "db.data").exists();
        String with = inspectCopy(dir.getName(), store, maxLen, logs, "inspect", false);
        String without = hasIndex ? inspectCopy(dir.getName(), store, maxLen, logs, "inspect-noindex", true) : with;
        exp.put("inspect", new Json.Raw(with));
        exp.put("inspectWithoutIndex", new Json.Raw(without));
        Files.write(expFile.toPath(), Json.write(exp).getBytes(StandardCharsets.UTF_8));
        System.out.println(dir + ": inspect and inspectWithoutIndex written");
    }

    /** Runs BrokerView (a full broker with the scenario's policies: what it counts and delivers) on a copy. */
    static String brokerView(String name, File store, Scenarios.Cfg cfg, File logs) throws Exception {
        File tmp = Files.createTempDirectory("brokerkit-view").toFile();
        try {
            File copy = new File(tmp, "store");
            copyDir(store, copy);
            Map<String, Object> pol = new LinkedHashMap<>();
            Map<String, Object> c = new LinkedHashMap<>();
            c.put("journalMaxFileLength", cfg.maxLen);
            pol.put("config", c);
            pol.put("policies", cfg.policies);
            File pf = new File(tmp, "policies.json");
            Files.write(pf.toPath(), Json.write(pol).getBytes(StandardCharsets.UTF_8));
            File out = new File(tmp, "view.json");
            int rc = fork(new File(logs, "brokerview.out"), "BrokerView", copy.getPath(), out.getPath(), "--policies",
                    pf.getPath(), "--max-file-length", String.valueOf(cfg.maxLen));
            if (rc != 0) throw new IOException(name + ": BrokerView failed (" + rc + "), see " + new File(logs, "brokerview.out"));
            return new String(Files.readAllBytes(out.toPath()), StandardCharsets.UTF_8);
        } finally {
            Records.deleteTree(tmp);
        }
    }

    /** Runs Inspect on a copy of store (without its index when noIndex) and returns its report. */
    static String inspectCopy(String name, File store, int maxLen, File logs, String tag, boolean noIndex)
            throws IOException, InterruptedException {
        File tmp = Files.createTempDirectory("brokerkit-inspect").toFile();
        try {
            File copy = new File(tmp, "store");
            copyDir(store, copy);
            if (noIndex) {
                for (String f : new String[]{"db.data", "db.redo", "db.free"}) new File(copy, f).delete();
            }
            File out = new File(tmp, "inspect.json");
            int irc = fork(new File(logs, tag + ".out"), "Inspect", copy.getPath(), out.getPath(),
                    "--max-file-length", String.valueOf(maxLen), "--log", new File(logs, tag + ".log").getPath());
            if (irc != 0) throw new IOException(name + ": Inspect failed (" + irc + "), see " + new File(logs, tag + ".out"));
            return new String(Files.readAllBytes(out.toPath()), StandardCharsets.UTF_8);
        } finally {
            Records.deleteTree(tmp);
        }
    }

    /**
     * messages.json: what the scenario sent (logs/sent.json) and what the broker recovers from a copy of the
     * store (Recovered), per message id.
     */
    static void writeMessages(String name, File sdir, File store, File logs, int maxLen) throws Exception {
        File tmp = Files.createTempDirectory("brokerkit-recovered").toFile();
        try {
            File copy = new File(tmp, "store");
            copyDir(store, copy);
            File out = new File(tmp, "recovered.json");
            int rc = fork(new File(logs, "recovered.out"), "Recovered", copy.getPath(), out.getPath(),
                    "--max-file-length", String.valueOf(maxLen));
            if (rc != 0) throw new IOException(name + ": Recovered failed (" + rc + "), see " + new File(logs, "recovered.out"));
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("sent", new Json.Raw(new String(Files.readAllBytes(new File(logs, "sent.json").toPath()), StandardCharsets.UTF_8)));
            m.put("recovered", new Json.Raw(new String(Files.readAllBytes(out.toPath()), StandardCharsets.UTF_8)));
            Files.write(new File(sdir, "messages.json").toPath(), Json.write(m).getBytes(StandardCharsets.UTF_8));
        } finally {
            Records.deleteTree(tmp);
        }
    }

    static int fileOrder(String n) {
        if (n.startsWith("db-") && n.endsWith(".log")) {
            try {
                return Integer.parseInt(n.substring(3, n.length() - 4));
            } catch (NumberFormatException e) {
                return Integer.MAX_VALUE;
            }
        }
        return Integer.MAX_VALUE;
    }

    static String activemqVersion() {
        Package p = org.apache.activemq.broker.BrokerService.class.getPackage();
        String v = p == null ? null : p.getImplementationVersion();
        return v == null ? "5.17.2 (Debian)" : v;
    }

    static void copyDir(File from, File to) throws IOException {
        to.mkdirs();
        File[] fs = from.listFiles();
        if (fs == null) return;
        for (File f : fs) {
            File t = new File(to, f.getName());
            if (f.isDirectory()) copyDir(f, t);
            else Files.copy(f.toPath(), t.toPath(), StandardCopyOption.COPY_ATTRIBUTES);
        }
    }

    /** For the checks: "[1, 2]" lines to a set. */
    static TreeSet<Integer> union(List<String> lines) {
        TreeSet<Integer> s = new TreeSet<>();
        for (String l : lines) s.addAll(Logs.parseIdList(l));
        return s;
    }

    static Map<String, Object> sortedCounts(Map<String, Integer> m) {
        return new TreeMap<>(m);
    }
}
