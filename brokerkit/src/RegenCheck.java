import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Compares a freshly generated scenario with the committed one on the facts that do not depend on
 * host names, ports or timing (message ids, and hence record sizes and file boundaries, do):
 * record types present, destinations, recovered pending counts per queue / subscription (count),
 * prepared XIDs and their number of adds/acks, and whether the restarted broker deleted something.
 *
 * Usage: RegenCheck COMMITTED_SCENARIO_DIR NEW_SCENARIO_DIR
 */
public final class RegenCheck {
    private RegenCheck() {}

    @SuppressWarnings("unchecked")
    static Map<String, Object> load(File dir) throws Exception {
        String s = new String(Files.readAllBytes(new File(dir, "expected.json").toPath()), StandardCharsets.UTF_8);
        return (Map<String, Object>) Json.parse(s);
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> summary(Map<String, Object> exp) {
        Map<String, Object> m = new TreeMap<>();
        m.put("recordTypes", new TreeSet<>(((Map<String, Object>) exp.get("counts")).keySet()).toString());
        Map<String, Object> ins = (Map<String, Object>) exp.get("inspect");
        m.put("destinations", String.valueOf(ins.get("destinations")));
        for (Map.Entry<String, Object> e : ((Map<String, Object>) ins.get("queues")).entrySet()) {
            m.put("queue " + e.getKey() + " pending", ((List<Object>) e.getValue()).size());
        }
        for (Map.Entry<String, Object> e : ((Map<String, Object>) ins.get("subscriptions")).entrySet()) {
            Map<String, Object> sub = (Map<String, Object>) e.getValue();
            m.put("sub " + e.getKey() + " count", sub.get("count"));
            m.put("sub " + e.getKey() + " pending", ((List<Object>) sub.get("pending")).size());
            m.put("sub " + e.getKey() + " selector", String.valueOf(sub.get("selector")));
        }
        List<String> prepared = new ArrayList<>();
        for (Object o : (List<Object>) ins.get("prepared")) {
            Map<String, Object> t = (Map<String, Object>) o;
            prepared.add(t.get("xid") + " adds=" + ((List<Object>) t.get("adds")).size()
                    + " acks=" + ((List<Object>) t.get("acks")).size());
        }
        m.put("prepared", prepared.toString());
        m.put("restart deletes files", !((List<Object>) ins.get("deleted")).isEmpty());
        Map<String, Object> run = (Map<String, Object>) exp.get("run");
        m.put("run stoppedCleanly", run.get("stoppedCleanly"));
        m.put("run GC deleted files", !((List<Object>) run.get("deletedDuringRun")).isEmpty());
        m.put("run ack compaction", !((List<Object>) run.get("reservedForForwardedAcks")).isEmpty());
        return m;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: RegenCheck COMMITTED_SCENARIO_DIR NEW_SCENARIO_DIR");
            System.exit(2);
        }
        Map<String, Object> a = summary(load(new File(args[0])));
        Map<String, Object> b = summary(load(new File(args[1])));
        TreeSet<String> keys = new TreeSet<>(a.keySet());
        keys.addAll(b.keySet());
        int diffs = 0;
        for (String k : keys) {
            Object x = a.get(k);
            Object y = b.get(k);
            if (x == null ? y != null : !x.equals(y)) {
                System.out.println("DIFF " + k + ": committed=" + x + " regenerated=" + y);
                diffs++;
            }
        }
        if (diffs > 0) {
            System.out.println(diffs + " difference(s)");
            System.exit(1);
        }
        System.out.println("regen-check OK: " + keys.size() + " facts identical");
    }
}
