import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;

import javax.jms.Connection;
import javax.jms.DeliveryMode;
import javax.jms.Destination;
import javax.jms.JMSException;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.MessageProducer;
import javax.jms.Session;
import javax.jms.TextMessage;
import javax.jms.XAConnection;
import javax.jms.XASession;
import javax.transaction.xa.XAResource;

import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.ActiveMQSession;
import org.apache.activemq.ActiveMQXAConnectionFactory;
import org.apache.activemq.broker.region.policy.PolicyEntry;
import org.apache.activemq.broker.region.policy.PolicyMap;
import org.apache.activemq.command.ActiveMQQueue;
import org.apache.activemq.command.ActiveMQTopic;

/**
 * A seeded random workload on a real embedded ActiveMQ 5.17 broker, for the differential test
 * (internal/difftest).
 *
 * Usage: Workload OUTDIR --seed N [--ops K] [--gc-trace]
 *
 * Writes OUTDIR/store/ (the KahaDB store the broker left), OUTDIR/workload.json (the seed, the adapter
 * configuration and destination policies chosen, every step done in order with message ids and what the
 * clients acknowledged) and OUTDIR/logs/ (plan.json, one broker log and one report per segment).
 *
 * Everything is chosen from java.util.Random(seed) by the planner, in this JVM, before the broker runs:
 * the same seed gives the same operations (message ids and timestamps differ). The plan is a list of
 * operations cut into segments by restarts; each segment runs in a child JVM ("Workload --segment OUTDIR S")
 * so that a segment can end with Runtime.halt (a killed broker), as Scenarios' crash does. The planner keeps
 * a model of what each queue and durable subscription holds (a lower bound of the messages that do not
 * expire) so that every receive it plans can be served.
 *
 * --gc-trace logs MessageDatabase at TRACE (the "gc candidates" lines); off by default because 5.17.2's
 * cleanup can then fail with a NullPointerException and stop the broker (see Logs.setup).
 */
public final class Workload {
    private Workload() {}

    static final int DEFAULT_OPS = 40;
    /** A segment that runs longer than this is killed (the workload fails). */
    static final long SEGMENT_TIMEOUT_MS = 180_000L;
    static final long FIRST_RECEIVE_MS = 3000;
    static final long NEXT_RECEIVE_MS = 1500;

    public static void main(String[] args) throws Exception {
        if (args.length == 3 && args[0].equals("--segment")) {
            System.exit(Runner.run(new File(args[1]).getAbsoluteFile(), Integer.parseInt(args[2])));
            return;
        }
        File outdir = null;
        Long seed = null;
        int nops = DEFAULT_OPS;
        boolean gcTrace = false;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--seed") && i + 1 < args.length) seed = Long.parseLong(args[++i]);
            else if (args[i].equals("--ops") && i + 1 < args.length) nops = Integer.parseInt(args[++i]);
            else if (args[i].equals("--gc-trace")) gcTrace = true;
            else if (outdir == null && !args[i].startsWith("--")) outdir = new File(args[i]).getAbsoluteFile();
            else usage("unknown argument: " + args[i]);
        }
        if (outdir == null || seed == null) usage(null);
        if (nops < 1) usage("--ops must be at least 1");
        System.exit(generate(outdir, seed, nops, gcTrace));
    }

    private static void usage(String why) {
        if (why != null) System.err.println(why);
        System.err.println("usage: Workload OUTDIR --seed N [--ops K] [--gc-trace]");
        System.exit(2);
    }

    // ------------------------------------------------------------------------------------------------
    // parent: plan, run the segments, merge their reports

    @SuppressWarnings("unchecked")
    static int generate(File outdir, long seed, int nops, boolean gcTrace) throws Exception {
        long t0 = System.currentTimeMillis();
        Records.deleteTree(new File(outdir, "store"));
        Records.deleteTree(new File(outdir, "logs"));
        new File(outdir, "workload.json").delete();
        File store = new File(outdir, "store");
        File logs = new File(outdir, "logs");
        store.mkdirs();
        logs.mkdirs();
        Files.write(new File(logs, ".gitignore").toPath(), "*\n!.gitignore\n".getBytes(StandardCharsets.UTF_8));

        Map<String, Object> plan = new Planner(seed, nops).plan();
        plan.put("gcTrace", gcTrace);
        Files.write(new File(logs, "plan.json").toPath(), Json.write(plan).getBytes(StandardCharsets.UTF_8));
        List<Map<String, Object>> segs = segments((List<Object>) plan.get("ops"));

        List<Object> segReports = new ArrayList<>();
        List<Object> steps = new ArrayList<>();
        List<String> errors = new ArrayList<>();
        List<String> rejected = new ArrayList<>();
        for (int s = 0; s < segs.size(); s++) {
            String end = (String) segs.get(s).get("end");
            int want = end.equals("halt") ? Scenarios.HALT_EXIT_CODE : 0;
            File out = new File(logs, "segment-" + s + ".out");
            long ts = System.currentTimeMillis();
            int rc = Generate.fork(out, SEGMENT_TIMEOUT_MS, "Workload", "--segment", outdir.getPath(), String.valueOf(s));
            double secs = (System.currentTimeMillis() - ts) / 1000.0;
            File rep = new File(logs, "segment-" + s + ".json");
            if (rc == Generate.TIMED_OUT) {
                errors.add("seed " + seed + " segment " + s + ": killed after " + SEGMENT_TIMEOUT_MS + " ms, see " + out);
                break;
            }
            if (rc != want || !rep.isFile()) {
                errors.add("seed " + seed + " segment " + s + ": child JVM exited with " + rc + " (expected " + want
                        + "), see " + out + " and " + new File(logs, "segment-" + s + ".log"));
                break;
            }
            Map<String, Object> r = (Map<String, Object>) Json.parse(
                    new String(Files.readAllBytes(rep.toPath()), StandardCharsets.UTF_8));
            steps.addAll((List<Object>) r.remove("steps"));
            for (Object e : (List<Object>) r.get("errors")) errors.add("seed " + seed + " segment " + s + ": " + e);
            if (r.get("rejected") instanceof List) {
                for (Object e : (List<Object>) r.get("rejected")) rejected.add("seed " + seed + " segment " + s + ": " + e);
            }
            r.put("seconds", secs);
            segReports.add(r);
            System.out.printf("Workload seed %d: segment %d (%s) done in %.1f s%n", seed, s, end, secs);
        }

        Map<String, Object> w = new LinkedHashMap<>();
        w.put("seed", seed);
        w.put("ops", nops);
        w.put("activemqVersion", Generate.activemqVersion());
        w.put("config", plan.get("config"));
        w.put("policies", plan.get("policies"));
        w.put("queues", plan.get("queues"));
        w.put("topics", plan.get("topics"));
        w.put("subscriptions", plan.get("subscriptions"));
        w.put("segments", segReports);
        w.put("errors", errors);
        w.put("rejected", rejected);
        summarize(w, steps);
        w.put("steps", steps);
        w.put("seconds", (System.currentTimeMillis() - t0) / 1000.0);
        Files.write(new File(outdir, "workload.json").toPath(), Json.write(w).getBytes(StandardCharsets.UTF_8));
        for (String e : errors) System.out.println("  ERROR: " + e);
        for (String e : rejected) System.out.println("  REJECTED: " + e);
        System.out.printf("Workload seed %d: %d steps, %d segments, %.1f s -> %s%n", seed, steps.size(), segReports.size(),
                (System.currentTimeMillis() - t0) / 1000.0, outdir);
        return errors.isEmpty() ? 0 : 1;
    }

    /**
     * Whether e is the broker refusing a client's acknowledgement: "Unmatched acknowledge ... Expected message count
     * (N) differs from count in dispatched-list (M)" (PrefetchSubscription.assertAckMatchesDispatched), met on durable
     * topic consumers (seeds 316, 342, 343, 406, 433; why the client's count differs is not known). The check comes
     * before the ack does anything, so the broker wrote nothing for it and the store stays what the broker made of the
     * workload: the step ends there (its received and acked are not recorded), the workload goes on, and the oracle
     * compares the store as for any other seed.
     */
    static boolean rejectedAck(Throwable e) {
        return e instanceof javax.jms.JMSException && e.getMessage() != null
                && e.getMessage().startsWith("Unmatched acknowledge:");
    }

    /** The segments of a plan: [{"from":i,"to":j (exclusive),"end":"clean"|"halt"|"stop"}]. */
    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> segments(List<Object> ops) {
        List<Map<String, Object>> out = new ArrayList<>();
        int from = 0;
        for (int i = 0; i < ops.size(); i++) {
            Map<String, Object> op = (Map<String, Object>) ops.get(i);
            String kind = (String) op.get("op");
            if (kind.equals("restart") || kind.equals("end")) {
                Map<String, Object> s = new LinkedHashMap<>();
                s.put("from", from);
                s.put("to", i + 1);
                s.put("end", op.get("how"));
                out.add(s);
                from = i + 1;
            }
        }
        return out;
    }

    /**
     * What the clients acknowledged, for the oracle, by where the acknowledgement was made ("queue://Q" or
     * "topic://T|clientId:subscriptionName": a topic message is acknowledged per subscription):
     * "acked" = acknowledgements that took effect (auto, client, individual, committed local and XA
     * transactions, prepared XA transactions committed later), "ackedInPrepared" = xid -> {where, ids} of
     * XA transactions left prepared at the end, "prepared" = their XIDs, "expirations" = message id ->
     * JMSExpiration of every message sent with a time to live, "sentInStep" = message id -> step.
     */
    @SuppressWarnings("unchecked")
    static void summarize(Map<String, Object> w, List<Object> steps) {
        Map<String, Object> acked = new java.util.TreeMap<>();
        Map<String, Object> inPrepared = new LinkedHashMap<>();
        Map<String, Object> exp = new LinkedHashMap<>();
        Map<String, Object> sent = new LinkedHashMap<>();
        for (Object o : steps) {
            Map<String, Object> st = (Map<String, Object>) o;
            Object ms = st.get("messages");
            if (ms instanceof List) {
                for (Object m : (List<Object>) ms) {
                    Map<String, Object> mm = (Map<String, Object>) m;
                    Object e = mm.get("exp");
                    if (e instanceof Number && ((Number) e).longValue() > 0) exp.put((String) mm.get("id"), e);
                    sent.put((String) mm.get("id"), st.get("n"));
                }
            }
            String kind = (String) st.get("op");
            List<Object> a = st.get("acked") instanceof List ? (List<Object>) st.get("acked") : Collections.emptyList();
            String outcome = (String) st.get("outcome");
            String where = ackedWhere(st);
            if (kind.equals("xa") && "prepare-leave".equals(outcome)) {
                inPrepared.put((String) st.get("xid"), m("where", where, "ids", new ArrayList<>(a)));
            } else if (kind.equals("xaresolve")) {
                Map<String, Object> held = (Map<String, Object>) inPrepared.remove(st.get("xid"));
                if ("commit".equals(outcome) && held != null) addAcked(acked, (String) held.get("where"), (List<Object>) held.get("ids"));
            } else if (kind.equals("xa") || kind.equals("localtx")) {
                if (outcome.equals("commit") || outcome.equals("onephase")) addAcked(acked, where, a);
            } else {
                addAcked(acked, where, a);
            }
        }
        w.put("acked", acked);
        w.put("ackedInPrepared", inPrepared);
        w.put("prepared", new ArrayList<>(inPrepared.keySet()));
        w.put("expirations", exp);
        w.put("sentInStep", sent);
    }

    /** Where a step's acknowledgements are made: its subscription's key, else the queue it received from. */
    @SuppressWarnings("unchecked")
    static String ackedWhere(Map<String, Object> st) {
        Map<String, Object> sub = (Map<String, Object>) st.get("sub");
        if (sub != null) return "topic://" + sub.get("topic") + "|" + sub.get("clientId") + ":" + sub.get("subscriptionName");
        if (st.get("from") != null) return (String) st.get("from");
        return (String) st.get("dest");
    }

    @SuppressWarnings("unchecked")
    static void addAcked(Map<String, Object> acked, String where, List<Object> ids) {
        if (ids.isEmpty()) return;
        ((List<Object>) acked.computeIfAbsent(where, k -> new ArrayList<>())).addAll(ids);
    }

    // ------------------------------------------------------------------------------------------------
    // the planner (parent JVM): every random choice is made here

    static Map<String, Object> m(Object... kv) {
        Map<String, Object> r = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) r.put((String) kv[i], kv[i + 1]);
        return r;
    }

    static final class QModel {
        final String name;
        final boolean prio;
        final boolean redel;
        int firm; // lower bound of pending messages without a time to live
        int nextIdx;
        QModel(String name, boolean prio, boolean redel) {
            this.name = name;
            this.prio = prio;
            this.redel = redel;
        }
    }

    static final class TModel {
        final String name;
        int nextIdx;
        TModel(String name) { this.name = name; }
    }

    static final class SModel {
        final TModel topic;
        final String cid;
        final String name;
        final String selector; // null: none
        final int selKind;     // 0 none, 1 even, 2 odd, 3 idx < arg, 4 idx >= arg
        final int selArg;
        final boolean noLocal;
        boolean alive = true;
        int firm;
        int heldByPrepared; // acks of this sub inside prepared XA transactions
        SModel(TModel topic, String cid, String name, int selKind, int selArg, boolean noLocal) {
            this.topic = topic;
            this.cid = cid;
            this.name = name;
            this.selKind = selKind;
            this.selArg = selArg;
            this.noLocal = noLocal;
            switch (selKind) {
                case 1: selector = "parity = 'even'"; break;
                case 2: selector = "parity = 'odd'"; break;
                case 3: selector = "idx < " + selArg; break;
                case 4: selector = "idx >= " + selArg; break;
                default: selector = null;
            }
        }
        boolean matches(int idx) {
            switch (selKind) {
                case 1: return idx % 2 == 0;
                case 2: return idx % 2 != 0;
                case 3: return idx < selArg;
                case 4: return idx >= selArg;
                default: return true;
            }
        }
    }

    /** A planned XA transaction left prepared: what its outcome does to the model. */
    static final class Prepared {
        final String gtrid;
        final String bq;
        final Runnable commit;
        final Runnable rollback;
        Prepared(String gtrid, String bq, Runnable commit, Runnable rollback) {
            this.gtrid = gtrid;
            this.bq = bq;
            this.commit = commit;
            this.rollback = rollback;
        }
    }

    static final class Planner {
        final long seed;
        final int nops;
        final Random r;
        final List<QModel> queues = new ArrayList<>();
        final List<TModel> topics = new ArrayList<>();
        final List<SModel> subs = new ArrayList<>();
        final List<Prepared> prepared = new ArrayList<>();
        final List<Object> ops = new ArrayList<>();
        boolean periodic;
        int maxLen;
        int bulks;
        int subCounter;

        Planner(long seed, int nops) {
            this.seed = seed;
            this.nops = nops;
            this.r = new Random(seed);
        }

        int between(int lo, int hi) { return lo + r.nextInt(hi - lo + 1); }
        boolean chance(double p) { return r.nextDouble() < p; }
        <T> T pick(List<T> l) { return l.get(r.nextInt(l.size())); }

        Map<String, Object> plan() {
            int[] kib = {16, 24, 32, 48, 64, 96, 128, 192, 256};
            maxLen = kib[r.nextInt(kib.length)] * 1024;
            String prealloc = r.nextBoolean() ? "none" : "entire_journal";
            boolean ackCompaction = r.nextInt(4) != 0;
            int noGC = between(1, 3);
            boolean ignoreGrowth = chance(0.35);
            periodic = r.nextBoolean();
            long cpInterval = periodic ? between(100, 500) : Scenarios.NO_PERIODIC;
            long clInterval = periodic ? between(200, 1000) : Scenarios.NO_PERIODIC;
            boolean cleanupOnStop = r.nextBoolean();
            String end = chance(0.35) ? "halt" : "stop";

            Map<String, Object> cfg = m(
                    "journalMaxFileLength", maxLen,
                    "preallocationScope", prealloc,
                    "enableAckCompaction", ackCompaction,
                    "compactAcksAfterNoGC", noGC,
                    "compactAcksIgnoresStoreGrowth", ignoreGrowth,
                    "periodicCheckpoints", periodic,
                    "checkpointInterval", cpInterval,
                    "cleanupInterval", clInterval,
                    "cleanupOnStop", cleanupOnStop,
                    "journalDiskSyncStrategy", "never",
                    "end", end);

            int nq = between(2, 4);
            for (int i = 1; i <= nq; i++) {
                boolean prio = chance(0.45);
                boolean redel = chance(0.3);
                queues.add(new QModel("Q." + i + (prio ? ".PRIO" : "") + (redel ? ".REDEL" : ""), prio, redel));
            }
            int nt = between(1, 3);
            for (int i = 1; i <= nt; i++) topics.add(new TModel("T." + i));

            List<Object> policies = new ArrayList<>();
            List<Object> qnames = new ArrayList<>();
            for (QModel q : queues) {
                qnames.add(q.name);
                if (q.prio || q.redel) {
                    policies.add(m("queue", q.name, "prioritizedMessages", q.prio, "persistJMSRedelivered", q.redel));
                }
            }
            List<Object> tnames = new ArrayList<>();
            for (TModel t : topics) tnames.add(t.name);

            // restarts in the middle: 0-2, each clean or a kill
            int nRestarts = chance(0.3) ? 0 : chance(0.65) ? 1 : 2;
            TreeSet<Integer> at = new TreeSet<>();
            while (at.size() < nRestarts && nops > 4) at.add(between(2, nops - 2));

            // some durable subscriptions exist before the first message
            for (TModel t : topics) if (chance(0.6)) ops.add(subCreate(t));
            for (int i = 0; i < nops; i++) {
                if (at.contains(i)) {
                    boolean halt = chance(0.45);
                    leftInFlight(halt);
                    ops.add(m("op", "restart", "how", halt ? "halt" : "clean"));
                }
                ops.add(work());
            }
            leftInFlight(end.equals("halt"));
            ops.add(m("op", "end", "how", end));
            for (int i = 0; i < ops.size(); i++) {
                @SuppressWarnings("unchecked")
                Map<String, Object> op = (Map<String, Object>) ops.get(i);
                Map<String, Object> numbered = m("n", i + 1);
                numbered.putAll(op);
                ops.set(i, numbered);
            }

            List<Object> subList = new ArrayList<>();
            for (SModel s : subs) {
                subList.add(m("topic", s.topic.name, "clientId", s.cid, "subscriptionName", s.name,
                        "selector", s.selector, "noLocal", s.noLocal));
            }
            return m("seed", seed, "config", cfg, "policies", policies, "queues", qnames, "topics", tnames,
                    "subscriptions", subList, "ops", ops);
        }

        /** Before a restart or the end: maybe leave a local and an XA transaction open. */
        void leftInFlight(boolean halt) {
            inFlightClient = null;
            if (chance(halt ? 0.5 : 0.2)) ops.add(localTx("leave"));
            if (halt && chance(0.4)) ops.add(xa("end-leave"));
            inFlightClient = null;
        }

        /**
         * The client id of the durable subscriber whose connection a transaction left in flight holds open
         * until the stop or kill: another transaction before it must not receive from that subscription
         * (the broker refuses a second connection with the same client id).
         */
        String inFlightClient;

        Map<String, Object> work() {
            List<String> kinds = new ArrayList<>();
            List<Integer> weights = new ArrayList<>();
            boolean queueFirm = false;
            for (QModel q : queues) queueFirm |= q.firm > 0;
            boolean subFirm = false;
            int alive = 0;
            boolean removable = false;
            for (SModel s : subs) {
                if (!s.alive) continue;
                alive++;
                subFirm |= s.firm > 0;
                removable |= s.heldByPrepared == 0;
            }
            boolean prioQueue = false;
            for (QModel q : queues) prioQueue |= q.prio;
            add(kinds, weights, "sendQ", 18, true);
            add(kinds, weights, "sendT", 12, true);
            add(kinds, weights, "consumeQ", 14, queueFirm);
            add(kinds, weights, "subCreate", 6, alive < 8);
            add(kinds, weights, "subConsume", 10, subFirm);
            add(kinds, weights, "unsubscribe", 2, removable && alive > 1);
            add(kinds, weights, "localtx", 7, true);
            add(kinds, weights, "xa", 7, true);
            add(kinds, weights, "xaresolve", 5, !prepared.isEmpty());
            add(kinds, weights, "redeliver", 4, queueFirm);
            add(kinds, weights, "big", 2, true);
            add(kinds, weights, "bulk", 2, prioQueue && bulks < 2);
            add(kinds, weights, "gc", 6, true);
            int total = 0;
            for (int w : weights) total += w;
            int x = r.nextInt(total);
            String kind = kinds.get(kinds.size() - 1);
            for (int i = 0; i < kinds.size(); i++) {
                x -= weights.get(i);
                if (x < 0) {
                    kind = kinds.get(i);
                    break;
                }
            }
            switch (kind) {
                case "sendQ": return sendQueue(pick(queues), between(1, 25), false);
                case "sendT": return sendTopic();
                case "consumeQ": return consumeQueue();
                case "subCreate": return subCreate(pick(topics));
                case "subConsume": return subConsume();
                case "unsubscribe": return unsubscribe();
                case "localtx": return localTx(chance(0.6) ? "commit" : "rollback");
                case "xa": {
                    double p = r.nextDouble();
                    String outcome = p < 0.3 ? "commit" : p < 0.45 ? "onephase" : p < 0.6 ? "prepare-rollback"
                            : p < 0.7 ? "rollback" : "prepare-leave";
                    if (outcome.equals("prepare-leave") && prepared.size() >= 3) outcome = "commit";
                    return xa(outcome);
                }
                case "xaresolve": return xaResolve();
                case "redeliver": return redeliver();
                case "big": return big();
                case "bulk": return bulk();
                default: return gc();
            }
        }

        void add(List<String> k, List<Integer> w, String kind, int weight, boolean feasible) {
            if (!feasible) return;
            k.add(kind);
            w.add(weight);
        }

        /** Per-message parameters of a send: sizes, priorities, times to live. */
        Map<String, Object> messages(int n, int minSize, int maxSize, boolean prios, int firstIdx) {
            List<Object> sizes = new ArrayList<>();
            List<Object> pr = new ArrayList<>();
            List<Object> ttls = new ArrayList<>();
            boolean randomPrio = prios && chance(0.6);
            boolean someTtl = chance(0.2);
            for (int i = 0; i < n; i++) {
                sizes.add(between(minSize, maxSize));
                pr.add(randomPrio ? r.nextInt(10) : 4);
                ttls.add(someTtl && chance(0.5) ? between(200, 2500) : 0);
            }
            return m("count", n, "firstIdx", firstIdx, "sizes", sizes, "priorities", pr, "ttls", ttls);
        }

        static int firmCount(Map<String, Object> msgs) {
            int n = 0;
            for (Object t : (List<?>) msgs.get("ttls")) if (((Number) t).intValue() == 0) n++;
            return n;
        }

        Map<String, Object> sendQueue(QModel q, int n, boolean big) {
            int bs = big ? bigSize() : 0;
            Map<String, Object> msgs = big ? messages(1, bs, bs, true, q.nextIdx)
                    : messages(n, 80, chance(0.1) ? 4000 : 1200, true, q.nextIdx);
            q.nextIdx += n;
            q.firm += firmCount(msgs);
            return m("op", big ? "big" : "send", "dest", "queue://" + q.name, "send", msgs);
        }

        int bigSize() {
            return Math.min(400_000, (int) (maxLen * (1.05 + 0.5 * r.nextDouble())));
        }

        /** Model of a send to a topic: which live subscriptions get each message (firm ones counted). */
        Runnable topicEffect(TModel t, Map<String, Object> msgs, SModel via) {
            List<SModel> targets = new ArrayList<>();
            for (SModel s : subs) if (s.alive && s.topic == t) targets.add(s);
            return () -> {
                int first = ((Number) msgs.get("firstIdx")).intValue();
                List<?> ttls = (List<?>) msgs.get("ttls");
                for (SModel s : targets) {
                    if (!s.alive) continue;
                    if (s == via && s.noLocal) continue;
                    for (int i = 0; i < ttls.size(); i++) {
                        if (((Number) ttls.get(i)).intValue() == 0 && s.matches(first + i)) s.firm++;
                    }
                }
            };
        }

        Map<String, Object> sendTopic() {
            TModel t = pick(topics);
            SModel via = null;
            List<SModel> on = aliveOn(t);
            if (!on.isEmpty() && chance(0.25)) via = pick(on);
            int n = between(1, 25);
            Map<String, Object> msgs = messages(n, 80, 1200, chance(0.3), t.nextIdx);
            t.nextIdx += n;
            topicEffect(t, msgs, via).run();
            Map<String, Object> op = m("op", "send", "dest", "topic://" + t.name, "send", msgs);
            if (via != null) op.put("via", subRef(via));
            return op;
        }

        List<SModel> aliveOn(TModel t) {
            List<SModel> l = new ArrayList<>();
            for (SModel s : subs) if (s.alive && s.topic == t) l.add(s);
            return l;
        }

        static Map<String, Object> subRef(SModel s) {
            return m("topic", s.topic.name, "clientId", s.cid, "subscriptionName", s.name, "selector", s.selector,
                    "noLocal", s.noLocal);
        }

        /** A receive of k messages and how they are acknowledged; returns how many are acked. */
        Map<String, Object> receivePlan(int k) {
            double p = r.nextDouble();
            String mode;
            List<Object> ackAt = new ArrayList<>(); // 1-based positions acked, in ack order
            if (p < 0.35) {
                mode = "auto";
            } else if (p < 0.5) {
                mode = "client";
                ackAt.add(k);
            } else if (p < 0.65) {
                mode = "client";
                ackAt.add(between(1, k));
            } else if (p < 0.92) {
                mode = "individual";
                List<Integer> pos = new ArrayList<>();
                for (int i = 1; i <= k; i++) if (chance(0.6)) pos.add(i);
                Collections.shuffle(pos, r);
                ackAt.addAll(pos);
            } else {
                mode = "client"; // received, never acknowledged
            }
            return m("count", k, "ack", mode, "ackAt", ackAt);
        }

        static int ackedCount(Map<String, Object> rp) {
            String mode = (String) rp.get("ack");
            int k = ((Number) rp.get("count")).intValue();
            List<?> at = (List<?>) rp.get("ackAt");
            if (mode.equals("auto")) return k;
            if (mode.equals("client")) return at.isEmpty() ? 0 : ((Number) at.get(0)).intValue();
            return at.size();
        }

        Map<String, Object> consumeQueue() {
            List<QModel> l = new ArrayList<>();
            for (QModel q : queues) if (q.firm > 0) l.add(q);
            QModel q = pick(l);
            Map<String, Object> rp = receivePlan(between(1, Math.min(q.firm, 25)));
            q.firm -= ackedCount(rp);
            return m("op", "consume", "dest", "queue://" + q.name, "receive", rp);
        }

        Map<String, Object> redeliver() {
            List<QModel> l = new ArrayList<>();
            for (QModel q : queues) if (q.firm > 0) l.add(q);
            // mostly the queues that persist the redelivered flag (KAHA_UPDATE_MESSAGE_COMMAND)
            List<QModel> red = new ArrayList<>();
            for (QModel q : l) if (q.redel) red.add(q);
            QModel q = !red.isEmpty() && chance(0.8) ? pick(red) : pick(l);
            int k = between(1, Math.min(q.firm, 5));
            return m("op", "redeliver", "dest", "queue://" + q.name,
                    "receive", m("count", k, "ack", "client", "ackAt", new ArrayList<>()));
        }

        Map<String, Object> subCreate(TModel t) {
            subCounter++;
            double p = r.nextDouble();
            int kind = p < 0.5 ? 0 : p < 0.62 ? 1 : p < 0.72 ? 2 : p < 0.86 ? 3 : 4;
            int arg = kind >= 3 ? t.nextIdx + between(0, 40) : 0;
            SModel s = new SModel(t, "c" + subCounter, "s" + subCounter, kind, arg, chance(0.25));
            subs.add(s);
            return m("op", "subscribe", "sub", subRef(s));
        }

        Map<String, Object> subConsume() {
            List<SModel> l = new ArrayList<>();
            for (SModel s : subs) if (s.alive && s.firm > 0) l.add(s);
            SModel s = pick(l);
            Map<String, Object> rp = receivePlan(between(1, Math.min(s.firm, 25)));
            s.firm -= ackedCount(rp);
            return m("op", "consume", "sub", subRef(s), "receive", rp);
        }

        Map<String, Object> unsubscribe() {
            List<SModel> l = new ArrayList<>();
            for (SModel s : subs) if (s.alive && s.heldByPrepared == 0) l.add(s);
            SModel s = pick(l);
            s.alive = false;
            return m("op", "unsubscribe", "sub", subRef(s));
        }

        /** Sends and a receive inside a transaction, with their model effects. */
        final class TxWork {
            final Map<String, Object> op;
            final List<Runnable> commit = new ArrayList<>();
            final List<Runnable> ackHold = new ArrayList<>();   // at prepare (acks hide messages)
            final List<Runnable> ackReturn = new ArrayList<>(); // at rollback of a prepared tx
            final List<Runnable> ackRelease = new ArrayList<>(); // at commit of a prepared tx

            TxWork(String kind, String outcome) {
                op = m("op", kind, "outcome", outcome);
                boolean send = chance(0.7);
                boolean recv = chance(0.6);
                List<QModel> firmQ = new ArrayList<>();
                for (QModel q : queues) if (q.firm > 0) firmQ.add(q);
                List<SModel> firmS = new ArrayList<>();
                for (SModel s : subs) if (s.alive && s.firm > 0 && !s.cid.equals(inFlightClient)) firmS.add(s);
                if (recv && firmQ.isEmpty() && firmS.isEmpty()) recv = false;
                if (!recv) send = true;
                if (send) {
                    int n = between(1, 8);
                    if (chance(0.65)) {
                        QModel q = pick(queues);
                        Map<String, Object> msgs = messages(n, 80, 800, true, q.nextIdx);
                        q.nextIdx += n;
                        op.put("dest", "queue://" + q.name);
                        op.put("send", msgs);
                        int firm = firmCount(msgs);
                        commit.add(() -> q.firm += firm);
                    } else {
                        TModel t = pick(topics);
                        Map<String, Object> msgs = messages(n, 80, 800, false, t.nextIdx);
                        t.nextIdx += n;
                        op.put("dest", "topic://" + t.name);
                        op.put("send", msgs);
                        // the subscriptions that exist when the transaction commits get the messages
                        commit.add(() -> topicEffect(t, msgs, null).run());
                    }
                }
                if (recv) {
                    boolean fromSub = !firmS.isEmpty() && (firmQ.isEmpty() || chance(0.4));
                    if (fromSub) {
                        SModel s = pick(firmS);
                        int k = between(1, Math.min(s.firm, 8));
                        op.put("sub", subRef(s));
                        op.put("receive", m("count", k));
                        if (outcome.equals("leave") || outcome.equals("end-leave")) inFlightClient = s.cid;
                        commit.add(() -> s.firm -= k);
                        ackRelease.add(() -> s.heldByPrepared -= k);
                        ackHold.add(() -> {
                            s.firm -= k;
                            s.heldByPrepared += k;
                        });
                        ackReturn.add(() -> {
                            s.firm += k;
                            s.heldByPrepared -= k;
                        });
                    } else {
                        QModel q = pick(firmQ);
                        int k = between(1, Math.min(q.firm, 8));
                        op.put("from", "queue://" + q.name);
                        op.put("receive", m("count", k));
                        commit.add(() -> q.firm -= k);
                        ackHold.add(() -> q.firm -= k);
                        ackReturn.add(() -> q.firm += k);
                    }
                }
            }
        }

        Map<String, Object> localTx(String outcome) {
            TxWork w = new TxWork("localtx", outcome);
            if (outcome.equals("commit")) w.commit.forEach(Runnable::run);
            return w.op;
        }

        Map<String, Object> xa(String outcome) {
            TxWork w = new TxWork("xa", outcome);
            String gtrid = "gx." + seed + "." + (ops.size() + 1);
            w.op.put("gtrid", gtrid);
            w.op.put("bq", "b1");
            switch (outcome) {
                case "commit":
                case "onephase":
                    w.commit.forEach(Runnable::run);
                    break;
                case "prepare-leave": {
                    w.ackHold.forEach(Runnable::run);
                    List<Runnable> adds = new ArrayList<>();
                    // on commit: the adds (the acks were applied at prepare)
                    if (w.op.containsKey("send")) adds.add(w.commit.get(0));
                    adds.addAll(w.ackRelease);
                    List<Runnable> back = new ArrayList<>(w.ackReturn);
                    prepared.add(new Prepared(gtrid, "b1", () -> adds.forEach(Runnable::run),
                            () -> back.forEach(Runnable::run)));
                    break;
                }
                default:
                    break; // rolled back or left in flight: no effect
            }
            return w.op;
        }

        Map<String, Object> xaResolve() {
            Prepared p = prepared.remove(r.nextInt(prepared.size()));
            boolean commit = r.nextBoolean();
            if (commit) {
                p.commit.run();
            } else {
                p.rollback.run();
            }
            return m("op", "xaresolve", "gtrid", p.gtrid, "bq", p.bq, "outcome", commit ? "commit" : "rollback");
        }

        Map<String, Object> big() {
            if (chance(0.7)) return sendQueue(pick(queues), 1, true);
            TModel t = pick(topics);
            int bs = bigSize();
            Map<String, Object> msgs = messages(1, bs, bs, false, t.nextIdx);
            t.nextIdx += 1;
            topicEffect(t, msgs, null).run();
            return m("op", "big", "dest", "topic://" + t.name, "send", msgs);
        }

        Map<String, Object> bulk() {
            bulks++;
            List<QModel> l = new ArrayList<>();
            for (QModel q : queues) if (q.prio) l.add(q);
            QModel q = pick(l);
            int n = between(201, 350);
            List<Object> sizes = new ArrayList<>();
            List<Object> pr = new ArrayList<>();
            List<Object> ttls = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                sizes.add(between(60, 200));
                pr.add(r.nextInt(10));
                ttls.add(0);
            }
            Map<String, Object> msgs = m("count", n, "firstIdx", q.nextIdx, "sizes", sizes, "priorities", pr, "ttls", ttls);
            q.nextIdx += n;
            q.firm += n;
            return m("op", "bulk", "dest", "queue://" + q.name, "send", msgs);
        }

        Map<String, Object> gc() {
            if (periodic) return m("op", "sleep", "ms", between(300, 1500));
            return m("op", "checkpoint", "times", between(1, 4));
        }
    }

    // ------------------------------------------------------------------------------------------------
    // the runner (child JVM): one segment of the plan on one broker

    static final class Runner {
        final Scenarios.Ctx x;
        final List<Object> steps = new ArrayList<>();
        final List<String> errors = new ArrayList<>();
        /** Acks the broker refused (rejectedAck): the step stops there, the workload goes on. */
        final List<String> rejected = new ArrayList<>();
        /** Sessions and connections left open on purpose (transactions in flight at the stop/kill). */
        final List<Object> keep = new ArrayList<>();

        Runner(Scenarios.Ctx x) { this.x = x; }

        @SuppressWarnings("unchecked")
        static int run(File outdir, int seg) {
            File logs = new File(outdir, "logs");
            watchdog(seg);
            try {
                Map<String, Object> plan = (Map<String, Object>) Json.parse(new String(
                        Files.readAllBytes(new File(logs, "plan.json").toPath()), StandardCharsets.UTF_8));
                boolean gcTrace = Boolean.TRUE.equals(plan.get("gcTrace"));
                Logs.setup(new File(logs, "segment-" + seg + ".log"), gcTrace);
                List<Object> ops = (List<Object>) plan.get("ops");
                Map<String, Object> s = segments(ops).get(seg);
                Scenarios.Ctx x = new Scenarios.Ctx(cfg((Map<String, Object>) plan.get("config"),
                        ((Number) plan.get("seed")).longValue()), outdir);
                Runner rn = new Runner(x);
                x.start(policies((List<Object>) plan.get("policies")));
                int from = ((Number) s.get("from")).intValue();
                int to = ((Number) s.get("to")).intValue();
                for (int i = from; i < to; i++) {
                    Map<String, Object> op = (Map<String, Object>) ops.get(i);
                    Map<String, Object> st = new LinkedHashMap<>(op);
                    st.put("segment", seg);
                    rn.steps.add(st);
                    String kind = (String) op.get("op");
                    if (kind.equals("restart") || kind.equals("end")) {
                        return rn.finish(seg, (String) op.get("how"), st);
                    }
                    long t0 = System.currentTimeMillis();
                    try {
                        rn.exec(op, st);
                    } catch (Exception e) {
                        if (rejectedAck(e)) {
                            st.put("rejected", e.toString());
                            rn.rejected.add("step " + op.get("n") + " (" + kind + "): " + e);
                        } else {
                            st.put("error", e.toString());
                            rn.errors.add("step " + op.get("n") + " (" + kind + "): " + e);
                        }
                        e.printStackTrace();
                    }
                    st.put("ms", System.currentTimeMillis() - t0);
                    x.step(describe(st));
                }
                throw new IllegalStateException("segment " + seg + " has no end");
            } catch (Throwable t) {
                t.printStackTrace();
                Logs.flush();
                return 1;
            }
        }

        /**
         * The segment ends itself (exit 3) when the JVM that started it is gone, or after SEGMENT_TIMEOUT_MS
         * and a minute more: a killed parent must not leave a broker running.
         */
        static void watchdog(int seg) {
            java.util.Optional<ProcessHandle> parent = ProcessHandle.current().parent();
            long deadline = System.currentTimeMillis() + SEGMENT_TIMEOUT_MS + 60_000;
            Thread t = new Thread(() -> {
                while (true) {
                    Scenarios.sleep(500);
                    boolean orphan = parent.isPresent() && !parent.get().isAlive();
                    if (orphan || System.currentTimeMillis() > deadline) {
                        System.err.println("Workload segment " + seg + ": " + (orphan ? "the parent JVM is gone" : "out of time") + ", halting");
                        Logs.flush();
                        Runtime.getRuntime().halt(3);
                    }
                }
            }, "workload-watchdog");
            t.setDaemon(true);
            t.start();
        }

        static Scenarios.Cfg cfg(Map<String, Object> c, long seed) {
            Scenarios.Cfg cfg = new Scenarios.Cfg();
            cfg.name = "workload-" + seed;
            cfg.maxLen = ((Number) c.get("journalMaxFileLength")).intValue();
            cfg.preallocationScope = (String) c.get("preallocationScope");
            cfg.checkpointInterval = ((Number) c.get("checkpointInterval")).longValue();
            cfg.cleanupInterval = ((Number) c.get("cleanupInterval")).longValue();
            cfg.cleanupOnStop = (Boolean) c.get("cleanupOnStop");
            cfg.enableAckCompaction = (Boolean) c.get("enableAckCompaction");
            cfg.compactAcksAfterNoGC = ((Number) c.get("compactAcksAfterNoGC")).intValue();
            cfg.compactAcksIgnoresStoreGrowth = (Boolean) c.get("compactAcksIgnoresStoreGrowth");
            cfg.journalDiskSyncStrategy = (String) c.get("journalDiskSyncStrategy");
            cfg.halt = "halt".equals(c.get("end"));
            return cfg;
        }

        @SuppressWarnings("unchecked")
        static PolicyMap policies(List<Object> ps) {
            List<PolicyEntry> es = new ArrayList<>();
            for (Object o : ps) {
                Map<String, Object> p = (Map<String, Object>) o;
                PolicyEntry e = new PolicyEntry();
                e.setQueue((String) p.get("queue"));
                e.setPrioritizedMessages(Boolean.TRUE.equals(p.get("prioritizedMessages")));
                e.setPersistJMSRedelivered(Boolean.TRUE.equals(p.get("persistJMSRedelivered")));
                es.add(e);
            }
            return Scenarios.policies(es.toArray(new PolicyEntry[0]));
        }

        int finish(int seg, String how, Map<String, Object> st) throws Exception {
            Map<String, Object> rep = new LinkedHashMap<>();
            rep.put("segment", seg);
            rep.put("end", how);
            rep.put("errors", errors);
            rep.put("rejected", rejected);
            if (how.equals("halt")) {
                Scenarios.sleep(300); // let the journal appender finish (a halt keeps the page cache)
                x.step("Runtime.halt(" + Scenarios.HALT_EXIT_CODE + ")");
                rep.put("stoppedCleanly", false);
                write(seg, rep);
                Logs.flush();
                System.out.flush();
                Runtime.getRuntime().halt(Scenarios.HALT_EXIT_CODE);
            }
            x.stop();
            rep.put("stoppedCleanly", true);
            write(seg, rep);
            return 0;
        }

        void write(int seg, Map<String, Object> rep) throws Exception {
            rep.put("cleanupLines", Logs.cleanupLines());
            rep.put("reservedForForwardedAcks", Logs.reservedLines());
            rep.put("steps", steps);
            Files.write(new File(x.sdir, "logs/segment-" + seg + ".json").toPath(),
                    Json.write(rep).getBytes(StandardCharsets.UTF_8));
        }

        static String describe(Map<String, Object> st) {
            StringBuilder sb = new StringBuilder("#" + st.get("n") + " " + st.get("op"));
            for (String k : new String[]{"dest", "from", "outcome", "gtrid"}) {
                if (st.get(k) != null) sb.append(' ').append(k).append('=').append(st.get(k));
            }
            if (st.get("sub") instanceof Map) {
                Map<?, ?> s = (Map<?, ?>) st.get("sub");
                sb.append(" sub=").append(s.get("clientId")).append(':').append(s.get("subscriptionName"));
            }
            if (st.get("received") instanceof List) sb.append(" received=").append(((List<?>) st.get("received")).size());
            if (st.get("acked") instanceof List) sb.append(" acked=").append(((List<?>) st.get("acked")).size());
            if (st.get("messages") instanceof List) sb.append(" sent=").append(((List<?>) st.get("messages")).size());
            return sb.toString();
        }

        // --- connections

        ActiveMQConnectionFactory cf() {
            ActiveMQConnectionFactory f = x.cf();
            f.getRedeliveryPolicy().setMaximumRedeliveries(-1); // never poison-ack into the DLQ
            return f;
        }

        Connection conn(String clientId) throws JMSException {
            Connection c = cf().createConnection();
            if (clientId != null) c.setClientID(clientId);
            c.start();
            return c;
        }

        XAConnection xaConn(String clientId) throws JMSException {
            ActiveMQXAConnectionFactory f = x.xacf();
            f.getRedeliveryPolicy().setMaximumRedeliveries(-1);
            XAConnection c = f.createXAConnection();
            if (clientId != null) c.setClientID(clientId);
            c.start();
            return c;
        }

        static Destination dest(String q) {
            if (q.startsWith("queue://")) return new ActiveMQQueue(q.substring(8));
            if (q.startsWith("topic://")) return new ActiveMQTopic(q.substring(8));
            throw new IllegalArgumentException("destination " + q);
        }

        static MessageConsumer durable(Session s, Map<String, Object> sub) throws JMSException {
            return s.createDurableSubscriber(new ActiveMQTopic((String) sub.get("topic")),
                    (String) sub.get("subscriptionName"), (String) sub.get("selector"),
                    Boolean.TRUE.equals(sub.get("noLocal")));
        }

        static int ackMode(String mode) {
            switch (mode) {
                case "auto": return Session.AUTO_ACKNOWLEDGE;
                case "individual": return ActiveMQSession.INDIVIDUAL_ACKNOWLEDGE;
                default: return Session.CLIENT_ACKNOWLEDGE;
            }
        }

        // --- operations

        @SuppressWarnings("unchecked")
        void exec(Map<String, Object> op, Map<String, Object> st) throws Exception {
            String kind = (String) op.get("op");
            switch (kind) {
                case "send":
                case "big":
                case "bulk": {
                    Map<String, Object> via = (Map<String, Object>) op.get("via");
                    Connection c = conn(via == null ? null : (String) via.get("clientId"));
                    try {
                        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
                        MessageConsumer own = via == null ? null : durable(s, via); // active while its connection publishes
                        st.put("messages", send(s, (String) op.get("dest"), (Map<String, Object>) op.get("send")));
                        if (own != null) own.close();
                    } finally {
                        c.close();
                    }
                    break;
                }
                case "consume":
                case "redeliver": {
                    Map<String, Object> rp = (Map<String, Object>) op.get("receive");
                    Map<String, Object> sub = (Map<String, Object>) op.get("sub");
                    Connection c = conn(sub == null ? null : (String) sub.get("clientId"));
                    try {
                        Session s = c.createSession(false, ackMode((String) rp.get("ack")));
                        MessageConsumer mc = sub == null ? s.createConsumer(dest((String) op.get("dest"))) : durable(s, sub);
                        receiveAndAck(mc, rp, st);
                        mc.close();
                    } finally {
                        c.close();
                    }
                    break;
                }
                case "subscribe": {
                    Map<String, Object> sub = (Map<String, Object>) op.get("sub");
                    Connection c = conn((String) sub.get("clientId"));
                    try {
                        durable(c.createSession(false, Session.AUTO_ACKNOWLEDGE), sub).close();
                    } finally {
                        c.close();
                    }
                    break;
                }
                case "unsubscribe": {
                    Map<String, Object> sub = (Map<String, Object>) op.get("sub");
                    Connection c = conn((String) sub.get("clientId"));
                    try {
                        c.createSession(false, Session.AUTO_ACKNOWLEDGE).unsubscribe((String) sub.get("subscriptionName"));
                    } finally {
                        c.close();
                    }
                    break;
                }
                case "localtx": localTx(op, st); break;
                case "xa": xa(op, st); break;
                case "xaresolve": {
                    XAConnection c = xaConn(null);
                    try {
                        XASession xs = c.createXASession();
                        XAResource xr = xs.getXAResource();
                        Scenarios.SimpleXid xid = new Scenarios.SimpleXid((String) op.get("gtrid"), (String) op.get("bq"));
                        st.put("xid", xid.brokerString());
                        if ("commit".equals(op.get("outcome"))) xr.commit(xid, false);
                        else xr.rollback(xid);
                        xs.close();
                    } finally {
                        c.close();
                    }
                    break;
                }
                case "checkpoint": {
                    int times = ((Number) op.get("times")).intValue();
                    List<Object> res = new ArrayList<>();
                    for (int i = 0; i < times; i++) {
                        int before = Logs.cleanupLines().size();
                        x.adapter.checkpoint(true);
                        List<String> l = Logs.cleanupLines();
                        res.add(l.size() > before ? l.get(l.size() - 1) : "nothing deleted");
                        Scenarios.sleep(50);
                    }
                    st.put("cleanups", res);
                    break;
                }
                case "sleep":
                    Scenarios.sleep(((Number) op.get("ms")).longValue());
                    break;
                default:
                    throw new IllegalArgumentException("unknown op " + kind);
            }
        }

        /** Sends the planned messages; returns [{id, idx, prio, ttl, exp, size}]. */
        static List<Object> send(Session s, String dest, Map<String, Object> msgs) throws JMSException {
            MessageProducer p = s.createProducer(dest(dest));
            List<Object> out = new ArrayList<>();
            int n = ((Number) msgs.get("count")).intValue();
            int first = ((Number) msgs.get("firstIdx")).intValue();
            List<?> sizes = (List<?>) msgs.get("sizes");
            List<?> prios = (List<?>) msgs.get("priorities");
            List<?> ttls = (List<?>) msgs.get("ttls");
            String prefix = dest.substring(dest.indexOf("://") + 3);
            for (int i = 0; i < n; i++) {
                int idx = first + i;
                int size = ((Number) sizes.get(i)).intValue();
                int prio = ((Number) prios.get(i)).intValue();
                long ttl = ((Number) ttls.get(i)).longValue();
                TextMessage m = s.createTextMessage(Scenarios.body(prefix, idx, size));
                m.setIntProperty("idx", idx);
                m.setStringProperty("parity", idx % 2 == 0 ? "even" : "odd");
                p.send(m, DeliveryMode.PERSISTENT, prio, ttl);
                Map<String, Object> r = m("id", m.getJMSMessageID(), "idx", idx, "prio", prio, "size", size);
                if (ttl > 0) {
                    r.put("ttl", ttl);
                    r.put("exp", m.getJMSExpiration());
                }
                out.add(r);
            }
            p.close();
            return out;
        }

        static List<Message> receiveUpTo(MessageConsumer c, int n) throws JMSException {
            List<Message> r = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Message m = c.receive(i == 0 ? FIRST_RECEIVE_MS : NEXT_RECEIVE_MS);
                if (m == null) break;
                r.add(m);
            }
            return r;
        }

        static List<Object> ids(List<Message> ms) throws JMSException {
            List<Object> l = new ArrayList<>();
            for (Message m : ms) l.add(m.getJMSMessageID());
            return l;
        }

        /**
         * Receives up to count messages and acknowledges them as planned; records received and acked ids.
         * client: Message.acknowledge() on the j-th message, right after receiving it (it acknowledges every
         * message the session received so far), the rest stay unacknowledged; individual: the planned
         * positions, in the planned (shuffled) order, after receiving all.
         */
        static void receiveAndAck(MessageConsumer mc, Map<String, Object> rp, Map<String, Object> st) throws JMSException {
            int k = ((Number) rp.get("count")).intValue();
            String mode = (String) rp.get("ack");
            List<?> at = (List<?>) rp.get("ackAt");
            List<Message> got = new ArrayList<>();
            List<Object> acked = new ArrayList<>();
            int clientAt = mode.equals("client") && !at.isEmpty() ? ((Number) at.get(0)).intValue() : -1;
            for (int i = 0; i < k; i++) {
                Message m = mc.receive(i == 0 ? FIRST_RECEIVE_MS : NEXT_RECEIVE_MS);
                if (m == null) break;
                got.add(m);
                if (mode.equals("auto")) acked.add(m.getJMSMessageID());
                if (i + 1 == clientAt) {
                    m.acknowledge();
                    acked.addAll(ids(got));
                }
            }
            if (mode.equals("individual")) {
                for (Object o : at) {
                    int j = ((Number) o).intValue();
                    if (j <= got.size()) {
                        got.get(j - 1).acknowledge();
                        acked.add(got.get(j - 1).getJMSMessageID());
                    }
                }
            }
            st.put("received", ids(got));
            st.put("acked", acked);
            if (got.size() < k) st.put("short", k - got.size());
        }

        @SuppressWarnings("unchecked")
        void localTx(Map<String, Object> op, Map<String, Object> st) throws Exception {
            Map<String, Object> sub = (Map<String, Object>) op.get("sub");
            Connection c = conn(sub == null ? null : (String) sub.get("clientId"));
            Session s = c.createSession(true, Session.SESSION_TRANSACTED);
            txWork(s, op, st);
            String outcome = (String) op.get("outcome");
            if (outcome.equals("commit")) s.commit();
            else if (outcome.equals("rollback")) s.rollback();
            else {
                keep.add(c); // in flight at the stop or kill
                keep.add(s);
                return;
            }
            c.close();
        }

        @SuppressWarnings("unchecked")
        void txWork(Session s, Map<String, Object> op, Map<String, Object> st) throws Exception {
            if (op.get("send") != null) st.put("messages", send(s, (String) op.get("dest"), (Map<String, Object>) op.get("send")));
            Map<String, Object> rp = (Map<String, Object>) op.get("receive");
            if (rp != null) {
                Map<String, Object> sub = (Map<String, Object>) op.get("sub");
                MessageConsumer mc = sub == null ? s.createConsumer(dest((String) op.get("from"))) : durable(s, sub);
                List<Message> got = receiveUpTo(mc, ((Number) rp.get("count")).intValue());
                st.put("received", ids(got));
                st.put("acked", ids(got)); // take effect with the outcome
                if (got.size() < ((Number) rp.get("count")).intValue()) st.put("short", ((Number) rp.get("count")).intValue() - got.size());
                mc.close();
            }
        }

        @SuppressWarnings("unchecked")
        void xa(Map<String, Object> op, Map<String, Object> st) throws Exception {
            Map<String, Object> sub = (Map<String, Object>) op.get("sub");
            XAConnection c = xaConn(sub == null ? null : (String) sub.get("clientId"));
            XASession xs = c.createXASession();
            XAResource xr = xs.getXAResource();
            Scenarios.SimpleXid xid = new Scenarios.SimpleXid((String) op.get("gtrid"), (String) op.get("bq"));
            st.put("xid", xid.brokerString());
            String outcome = (String) op.get("outcome");
            xr.start(xid, XAResource.TMNOFLAGS);
            txWork(xs.getSession(), op, st);
            xr.end(xid, XAResource.TMSUCCESS);
            switch (outcome) {
                case "commit":
                    st.put("vote", xr.prepare(xid));
                    if (((Number) st.get("vote")).intValue() == XAResource.XA_OK) xr.commit(xid, false);
                    break;
                case "onephase":
                    xr.commit(xid, true);
                    break;
                case "prepare-rollback":
                    st.put("vote", xr.prepare(xid));
                    if (((Number) st.get("vote")).intValue() == XAResource.XA_OK) xr.rollback(xid);
                    break;
                case "rollback":
                    xr.rollback(xid);
                    break;
                case "prepare-leave":
                    st.put("vote", xr.prepare(xid));
                    break;
                case "end-leave":
                    keep.add(c); // ended, not prepared, at the kill
                    keep.add(xs);
                    return;
                default:
                    throw new IllegalArgumentException("xa outcome " + outcome);
            }
            xs.close();
            c.close();
        }
    }

}
