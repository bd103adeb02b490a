import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import javax.jms.Connection;
import javax.jms.DeliveryMode;
import javax.jms.Destination;
import javax.jms.JMSException;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.MessageProducer;
import javax.jms.Session;
import javax.jms.TextMessage;
import javax.jms.Topic;
import javax.jms.XAConnection;
import javax.jms.XASession;
import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;

import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.ActiveMQXAConnectionFactory;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.broker.region.policy.PolicyEntry;
import org.apache.activemq.broker.region.policy.PolicyMap;
import org.apache.activemq.command.ActiveMQQueue;
import org.apache.activemq.command.ActiveMQTopic;
import org.apache.activemq.command.XATransactionId;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;

/** The scenarios. Each runs in its own JVM (see Generate). */
public final class Scenarios {
    private Scenarios() {}

    public static final String[] ALL = {"queues", "topics", "tx", "crash", "ackcompact", "hostile", "messages",
            "ackfwd-gone", "ackfwd-gone-tail", "ackfwd-chain", "priority"};
    public static final int HALT_EXIT_CODE = 77;
    /** Long enough that no periodic checkpoint fires during a run: all GC is explicit (adapter.checkpoint). */
    static final long NO_PERIODIC = 3_600_000L;
    static final int XA_FORMAT = 4660; // 0x1234
    static final String SEND_NOTE = Hostile.SEND + " persistent messages to each, some consumed.";

    /** Per-scenario adapter configuration (also recorded in expected.json). */
    public static final class Cfg {
        String name;
        String description;
        int maxLen = 16 * 1024;
        String preallocationScope = "none";     // null = adapter default (entire_journal)
        String preallocationStrategy = null;    // null = adapter default (sparse_file)
        long checkpointInterval = NO_PERIODIC;
        long cleanupInterval = NO_PERIODIC;
        boolean cleanupOnStop = false;
        Integer compactAcksAfterNoGC = null;
        /** Destination policies ({"queue", "prioritizedMessages", ...}) for BrokerView; null: no BrokerView run. */
        List<Map<String, Object>> policies = null;
        Boolean compactAcksIgnoresStoreGrowth = null;
        Boolean enableAckCompaction = null;     // null = adapter default (true)
        String journalDiskSyncStrategy = null;  // null = adapter default (always)
        boolean halt = false;
        /** Generate records every pending message as the broker reads it back (Recovered) in messages.json. */
        boolean recordMessages = false;

        Map<String, Object> toMap() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("journalMaxFileLength", maxLen);
            m.put("preallocationScope", preallocationScope == null ? "entire_journal (default)" : preallocationScope);
            m.put("preallocationStrategy", preallocationStrategy == null ? "sparse_file (default)" : preallocationStrategy);
            m.put("checkpointInterval", checkpointInterval);
            m.put("cleanupInterval", cleanupInterval);
            m.put("cleanupOnStop", cleanupOnStop);
            m.put("enableAckCompaction", enableAckCompaction == null || enableAckCompaction);
            m.put("compactAcksAfterNoGC", compactAcksAfterNoGC == null ? 10 : compactAcksAfterNoGC);
            m.put("compactAcksIgnoresStoreGrowth", compactAcksIgnoresStoreGrowth != null && compactAcksIgnoresStoreGrowth);
            m.put("endsWithHalt", halt);
            m.put("gc", "explicit KahaDBPersistenceAdapter.checkpoint(true) calls at fixed points; periodic intervals set to "
                    + NO_PERIODIC + " ms so none fires");
            return m;
        }
    }

    public static Cfg cfg(String name) {
        if (Fidelity.has(name)) return Fidelity.cfg(name);
        Cfg c = new Cfg();
        c.name = name;
        switch (name) {
            case "queues":
                c.preallocationScope = null;      // the one store with default sparse_file preallocation
                c.preallocationStrategy = null;
                c.description = "Queues. Q.PLAIN (no priority support, mixed JMS priorities, 60 sent / 45 consumed), "
                        + "Q.PRIO (prioritizedMessages=true, priorities (i*7)%10, 30 sent, slow consumer took 10), "
                        + "Q.BIG (a 10000-char text message, larger than half a 16 KiB journal file, plus one small), "
                        + "Q.REDELIVER (persistJMSRedelivered=true: CLIENT_ACK consumer got 3, acked 1, closed -> "
                        + "KAHA_UPDATE_MESSAGE_COMMAND records), Q.REMOVED (5 messages then BrokerService.removeDestination "
                        + "-> KAHA_REMOVE_DESTINATION_COMMAND), Q.TRANSIENT (60 sent and consumed after the GC: garbage). One GC during the run; stopped with cleanupOnStop=false "
                        + "so the next start deletes garbage. Default sparse_file preallocation (entire_journal scope): "
                        + "every db-N.log except the tail has apparent size 16384.";
                break;
            case "topics":
                c.description = "Durable subscriptions. T.ALL: c-all:s-all created first, 30 messages sent and all consumed "
                        + "(db-1.log). T.NEWS: c-early:s-early, c-unsub:s-unsub and c-sel:s-sel (selector parity = 'even') "
                        + "created before the first message, c-late:s-late created after 20 of 40 messages; c-early "
                        + "consumed 25, c-sel 5, c-late 3, c-unsub consumed 10 then unsubscribed (subscription delete "
                        + "command). GC (c-all's subscription record is rewritten, db-1.log deleted), stop without cleanup, "
                        + "restart (second LOADED trace), 60 more T.ALL messages sent and consumed by c-all, stop with "
                        + "cleanupOnStop=false. preallocationScope=none.";
                break;
            case "tx":
                c.cleanupOnStop = true;
                c.description = "Transactions. XA gtrid-prepared (formatId 4660) starts first with 1 send to Q.XA and stays "
                        + "open while: local tx on Q.TX 5 x 10 sent+commit, 3 sent+rollback, 2 x 10 received+commit, "
                        + "2 received+rollback; T.TX (durable c-tx:s-tx, c-xa:s-xa) 4 sent+commit, 2 sent+rollback, c-tx "
                        + "received 2 + commit; XA on Q.XA: gtrid-commit (3 sends, prepare, commit), gtrid-rollback (2 "
                        + "sends, prepare, rollback), gtrid-onephase (1 send, one-phase commit). Then gtrid-prepared sends 1 "
                        + "more, acks the first Q.XA message and (as c-xa:s-xa) the first T.TX message, is prepared and "
                        + "left PREPARED: its records span several files (in-progress tx range). Clean stop "
                        + "(cleanupOnStop=true). preallocationScope=none.";
                break;
            case "crash":
                c.halt = true;
                c.description = "Crash: Q.CRASH 40 sent / 30 consumed, GC, Q.CRASH.MORE 60 sent / 60 consumed (garbage), "
                        + "then a local transaction left open (3 sends to Q.CRASH + 2 receives from Q.CRASH), an XA "
                        + "transaction gtrid-crash-prepared (1 send to Q.CRASH.XA) prepared, and an XA transaction "
                        + "gtrid-inflight (2 sends to Q.CRASH.XA) ended but NOT prepared; then Runtime.halt: no "
                        + "checkpoint, no clean shutdown. A restart rolls back the local tx (writes a rollback record), "
                        + "discards the unprepared XA tx and recovers gtrid-crash-prepared as prepared. "
                        + "preallocationScope=none.";
                break;
            case "ackcompact":
                c.compactAcksAfterNoGC = 2;
                c.compactAcksIgnoresStoreGrowth = true;
                c.description = "Ack compaction: Q.PIN keeps one pending message in db-1.log; Q.WORK 100 messages (some in "
                        + "db-1.log) all consumed, Q.FILL 40 sent+consumed; GC deletes what it can, then cleanup cycles "
                        + "that delete nothing (compactAcksAfterNoGC=2, compactAcksIgnoresStoreGrowth=true) make the "
                        + "broker forward the acks of the oldest ack file into a new file that starts with "
                        + "KAHA_REWRITTEN_DATA_FILE_COMMAND. Stopped right after that, with cleanupOnStop=false, so the "
                        + "source file is still there. preallocationScope=none.";
                break;
            case "hostile":
                c.description = "Hostile names from real clients (see Hostile.java): queues and topics (each topic with a "
                        + "durable subscription whose client id and subscription name are hostile too) named ../x, a/b, "
                        + "a%2Fb, ., .., .hidden, ../../../../etc/passwd, 300-byte names (ASCII, two differing only in "
                        + "the last byte; 150 x U+00FC), 100 x U+0001, control characters, NUL, tab, space, %, %2E%2E, "
                        + "x%~2, x%#..., non-ASCII, an emoji, zero-width and no-break spaces, a right-to-left override, "
                        + "lone UTF-16 surrogates, the empty name (\"\" and \"?\") and a whitespace-only name; "
                        + SEND_NOTE + " Every name is tried through a TCP connector first (OpenWire marshalling), then "
                        + "through the VM transport; run.notes.attempts records what was accepted or rejected and by "
                        + "whom. Q.IDS: message ids and a local transaction id with the connection id prefix "
                        + "../id/%\\u00e9\\u0001. The empty-name destinations are removed (removeDestination) before the stop "
                        + "(a broker cannot start with them). Stopped with cleanupOnStop=false; then db.data and "
                        + "db.redo are deleted (several 4 KiB index pages per destination would make the store "
                        + "~2.5 MB): the broker rebuilds its index from the journal. preallocationScope=none.";
                break;
            case "messages":
                c.recordMessages = true;
                c.description = "Message content. Q.MSG: every JMS message type (Text, Bytes, Map, Stream, Object of "
                        + "kahafs.fixture.Parcel, a plain Message and a TextMessage without text), each sent once without "
                        + "and once with compression (useCompression=true; the StreamMessage through compress()), "
                        + "properties of every type (boolean, byte, short, int, long, float, double, NaN, -Infinity, "
                        + "string, empty string, NUL, char, nested map and list holding byte[] and null), one text "
                        + "message with priority 7, a 100-year time to live, correlation id, JMSType, reply-to "
                        + "queue://Q.REPLY, group id and sequence; large bodies (5000-char text and 6000 bytes "
                        + "uncompressed, 20000-char text and a 9000-char map string compressed). Q.REDELIVERED "
                        + "(persistJMSRedelivered=true): 1 message delivered and not acknowledged -> "
                        + "KAHA_UPDATE_MESSAGE_COMMAND with redeliveryCounter 1. Q.DLQSRC: 1 message rolled back by a "
                        + "consumer with maximumRedeliveries=0 -> ActiveMQ.DLQ (originalDestination queue://Q.DLQSRC). "
                        + "Clients over TCP. messages.json: what was sent and what the broker recovers, per message id. "
                        + "Stopped with cleanupOnStop=false. preallocationScope=none.";
                break;
            default:
                throw new IllegalArgumentException("unknown scenario " + name);
        }
        return c;
    }

    // ------------------------------------------------------------------------------------------------
    // child JVM

    static int runChild(String name, File sdir) throws Exception {
        File logs = new File(sdir, "logs");
        Logs.setup(new File(logs, "generate.log"));
        Ctx x = new Ctx(cfg(name), sdir);
        try {
            switch (name) {
                case "queues": queues(x); break;
                case "topics": topics(x); break;
                case "tx": tx(x); break;
                case "crash": crash(x); break; // does not return
                case "ackcompact": ackcompact(x); break;
                case "hostile": Hostile.run(x); break;
                case "messages": Messages.run(x); break;
                default:
                    if (!Fidelity.has(name)) throw new IllegalArgumentException(name);
                    Fidelity.run(x);
                    break;
            }
            x.writeRun(true);
            return 0;
        } catch (Throwable t) {
            t.printStackTrace();
            Logs.flush();
            return 1;
        }
    }

    static final class SimpleXid implements Xid {
        final int fmt;
        final byte[] gtrid;
        final byte[] bqual;

        SimpleXid(String g, String b) {
            this.fmt = XA_FORMAT;
            this.gtrid = g.getBytes(StandardCharsets.UTF_8);
            this.bqual = b.getBytes(StandardCharsets.UTF_8);
        }

        @Override public int getFormatId() { return fmt; }
        @Override public byte[] getGlobalTransactionId() { return gtrid; }
        @Override public byte[] getBranchQualifier() { return bqual; }

        /** How the broker prints it: XID:[fmt,globalId=hex,branchId=hex]. */
        String brokerString() { return new XATransactionId(this).toString(); }
    }

    /** Scenario context: broker, adapter, notes for run.json. */
    static final class Ctx {
        final Cfg cfg;
        final File sdir;
        final File store;
        final String brokerName;
        BrokerService broker;
        KahaDBPersistenceAdapter adapter;
        final Map<String, Object> notes = new LinkedHashMap<>();
        final Map<String, Object> expectQueues = new LinkedHashMap<>();
        final Map<String, Object> expectSubs = new LinkedHashMap<>();
        final Map<String, Object> expectSubCounts = new LinkedHashMap<>();
        final List<Object> expectPrepared = new ArrayList<>();
        final List<Object> expectNotPrepared = new ArrayList<>();
        final List<String> steps = new ArrayList<>();
        boolean stoppedCleanly;
        /** Adds a TCP connector on an ephemeral loopback port (hostile: remote clients). */
        boolean tcpConnector;

        Ctx(Cfg cfg, File sdir) {
            this.cfg = cfg;
            this.sdir = sdir;
            this.store = new File(sdir, "store");
            this.brokerName = "gen-" + cfg.name;
        }

        void step(String s) {
            steps.add(s);
            java.util.logging.Logger.getLogger("brokerkit").info("STEP " + s);
        }

        void start(PolicyMap pm) throws Exception {
            BrokerService b = new BrokerService();
            b.setBrokerName(brokerName);
            b.setUseJmx(false);
            b.setAdvisorySupport(false);
            b.setSchedulerSupport(false);
            b.setPersistent(true);
            b.setUseShutdownHook(false);
            b.setDataDirectoryFile(new File(sdir, "logs/broker-data"));
            KahaDBPersistenceAdapter a = new KahaDBPersistenceAdapter();
            a.setDirectory(store);
            a.setJournalMaxFileLength(cfg.maxLen);
            if (cfg.preallocationScope != null) a.setPreallocationScope(cfg.preallocationScope);
            if (cfg.preallocationStrategy != null) a.setPreallocationStrategy(cfg.preallocationStrategy);
            a.setCheckpointInterval(cfg.checkpointInterval);
            a.setCleanupInterval(cfg.cleanupInterval);
            a.setCleanupOnStop(cfg.cleanupOnStop);
            if (cfg.compactAcksAfterNoGC != null) a.setCompactAcksAfterNoGC(cfg.compactAcksAfterNoGC);
            if (cfg.compactAcksIgnoresStoreGrowth != null) a.setCompactAcksIgnoresStoreGrowth(cfg.compactAcksIgnoresStoreGrowth);
            if (cfg.enableAckCompaction != null) a.setEnableAckCompaction(cfg.enableAckCompaction);
            if (cfg.journalDiskSyncStrategy != null) a.setJournalDiskSyncStrategy(cfg.journalDiskSyncStrategy);
            b.setPersistenceAdapter(a);
            if (pm != null) b.setDestinationPolicy(pm);
            if (tcpConnector) b.addConnector("tcp://127.0.0.1:0");
            b.start();
            if (!b.waitUntilStarted(30000)) throw new IllegalStateException("broker did not start");
            broker = b;
            adapter = a;
            step("broker started");
        }

        void stop() throws Exception {
            step("broker stop (cleanupOnStop=" + cfg.cleanupOnStop + ")");
            broker.stop();
            broker.waitUntilStopped();
            stoppedCleanly = true;
        }

        /**
         * Deletes the index after the stop (db.data, db.redo: several 4 KiB pages per destination) to keep
         * a fixture small: the store is what a broker sees after an admin deleted db.data. Inspect rebuilds
         * the index from the journal.
         */
        void dropIndex() throws java.io.IOException {
            long dropped = 0;
            for (String fn : new String[]{"db.data", "db.redo", "db.free"}) {
                File file = new File(store, fn);
                if (file.exists()) {
                    dropped += file.length();
                    if (!file.delete()) throw new java.io.IOException("cannot delete " + file);
                }
            }
            step("index dropped (db.data, db.redo: " + dropped + " bytes)");
            notes.put("index", "db.data and db.redo deleted after the broker stopped (" + dropped + " bytes)");
        }

        void gc() throws Exception {
            int before = Logs.cleanupLines().size();
            adapter.checkpoint(true);
            List<String> l = Logs.cleanupLines();
            step("checkpoint(true) -> " + (l.size() > before ? "deleted " + l.get(l.size() - 1) : "nothing deleted"));
        }

        ActiveMQConnectionFactory cf() {
            ActiveMQConnectionFactory f = new ActiveMQConnectionFactory("vm://" + brokerName + "?create=false");
            tune(f);
            return f;
        }

        ActiveMQXAConnectionFactory xacf() {
            ActiveMQXAConnectionFactory f = new ActiveMQXAConnectionFactory("vm://" + brokerName + "?create=false");
            tune(f);
            return f;
        }

        static void tune(ActiveMQConnectionFactory f) {
            f.setWatchTopicAdvisories(false);
            f.setAlwaysSyncSend(true);
            f.setSendAcksAsync(false);
            f.getPrefetchPolicy().setAll(1);
        }

        Connection conn(String clientId) throws JMSException {
            Connection c = cf().createConnection();
            if (clientId != null) c.setClientID(clientId);
            c.start();
            return c;
        }

        void writeRun(boolean write) throws Exception {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("stoppedCleanly", stoppedCleanly);
            m.put("endedWithHalt", cfg.halt);
            List<String> lines = Logs.cleanupLines();
            m.put("deletedDuringRun", new ArrayList<>(Generate.union(lines)));
            m.put("cleanupLines", lines);
            m.put("reservedForForwardedAcks", Logs.reservedLines());
            m.put("rewriteLines", Logs.linesContaining("Found candidate for rewrite"));
            m.put("steps", steps);
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("queuePendingCounts", expectQueues);
            e.put("subscriptionPendingCounts", expectSubs);
        e.put("subscriptionMessageCounts", expectSubCounts);
            e.put("preparedXids", expectPrepared);
            e.put("notPreparedXids", expectNotPrepared);
            m.put("expect", e);
            m.put("notes", notes);
            Logs.flush();
            Files.write(new File(sdir, "logs/run.json").toPath(), Json.write(m).getBytes(StandardCharsets.UTF_8));
        }
    }

    // ------------------------------------------------------------------------------------------------
    // JMS helpers

    /** Deterministic body: "<prefix> #<i> " padded with a fixed alphabet pattern to len chars. */
    static String body(String prefix, int i, int len) {
        StringBuilder sb = new StringBuilder(len);
        sb.append(prefix).append(" #").append(i).append(' ');
        String pat = "abcdefghijklmnopqrstuvwxyz0123456789";
        int k = 0;
        while (sb.length() < len) sb.append(pat.charAt(k++ % pat.length()));
        return sb.toString();
    }

    interface Prio { int of(int i); }

    static List<String> send(Session s, Destination d, String prefix, int from, int count, int len, Prio prio)
            throws JMSException {
        MessageProducer p = s.createProducer(d);
        List<String> ids = new ArrayList<>();
        for (int i = from; i < from + count; i++) {
            TextMessage m = s.createTextMessage(body(prefix, i, len));
            m.setIntProperty("idx", i);
            m.setStringProperty("parity", i % 2 == 0 ? "even" : "odd");
            p.send(m, DeliveryMode.PERSISTENT, prio == null ? 4 : prio.of(i), 0);
            ids.add(m.getJMSMessageID());
        }
        p.close();
        return ids;
    }

    static List<Message> receive(MessageConsumer c, int n) throws JMSException {
        List<Message> r = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Message m = c.receive(5000);
            if (m == null) throw new IllegalStateException("expected message " + (i + 1) + " of " + n + ", got none");
            r.add(m);
        }
        return r;
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static PolicyMap policies(PolicyEntry... entries) {
        PolicyMap pm = new PolicyMap();
        pm.setPolicyEntries(new ArrayList<>(Arrays.asList(entries)));
        return pm;
    }

    // ------------------------------------------------------------------------------------------------
    // scenarios

    static void queues(Ctx x) throws Exception {
        PolicyEntry prio = new PolicyEntry();
        prio.setQueue("Q.PRIO");
        prio.setPrioritizedMessages(true);
        PolicyEntry redeliver = new PolicyEntry();
        redeliver.setQueue("Q.REDELIVER");
        redeliver.setPersistJMSRedelivered(true);
        x.start(policies(prio, redeliver));

        Connection c = x.conn(null);
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        ActiveMQQueue plain = new ActiveMQQueue("Q.PLAIN");
        ActiveMQQueue qprio = new ActiveMQQueue("Q.PRIO");
        ActiveMQQueue big = new ActiveMQQueue("Q.BIG");
        send(s, plain, "Q.PLAIN", 0, 40, 300, i -> (i * 3) % 10);
        x.step("sent 40 to Q.PLAIN (priorities (i*3)%10, no priority support)");
        send(s, qprio, "Q.PRIO", 0, 30, 200, i -> (i * 7) % 10);
        x.step("sent 30 to Q.PRIO (priorities (i*7)%10, prioritizedMessages=true)");
        send(s, big, "Q.BIG", 0, 1, 10000, null);
        send(s, big, "Q.BIG", 1, 1, 100, null);
        x.step("sent 1 x 10000-char + 1 small to Q.BIG");

        MessageConsumer mc = s.createConsumer(plain);
        receive(mc, 30);
        mc.close();
        x.step("consumed 30 from Q.PLAIN");
        mc = s.createConsumer(qprio);
        for (int i = 0; i < 10; i++) {
            receive(mc, 1);
            sleep(20); // slow consumer
        }
        mc.close();
        x.step("slow consumer took 10 from Q.PRIO");
        x.gc();

        // garbage: whole files of consumed messages
        ActiveMQQueue trans = new ActiveMQQueue("Q.TRANSIENT");
        send(s, trans, "Q.TRANSIENT", 0, 60, 300, null);
        mc = s.createConsumer(trans);
        receive(mc, 60);
        mc.close();
        x.step("Q.TRANSIENT: 60 sent, 60 consumed");

        // persistJMSRedelivered: an UPDATE is written before a message is first dispatched
        ActiveMQQueue red = new ActiveMQQueue("Q.REDELIVER");
        send(s, red, "Q.REDELIVER", 0, 6, 150, null);
        Session ca = c.createSession(false, Session.CLIENT_ACKNOWLEDGE);
        MessageConsumer rc = ca.createConsumer(red);
        List<Message> got = receive(rc, 1);
        got.get(0).acknowledge();
        receive(rc, 2);
        rc.close();
        ca.close();
        x.step("Q.REDELIVER: 6 sent, CLIENT_ACK consumer received 3 (acked the first), session closed");

        ActiveMQQueue removed = new ActiveMQQueue("Q.REMOVED");
        send(s, removed, "Q.REMOVED", 0, 5, 150, null);
        x.broker.removeDestination(removed);
        x.step("Q.REMOVED: 5 sent, then BrokerService.removeDestination");

        send(s, plain, "Q.PLAIN", 40, 20, 300, i -> (i * 3) % 10);
        mc = s.createConsumer(plain);
        receive(mc, 15);
        mc.close();
        x.step("Q.PLAIN: 20 more sent, 15 more consumed");
        c.close();
        x.stop();

        x.expectQueues.put("Q.PLAIN", 15);
        x.expectQueues.put("Q.PRIO", 20);
        x.expectQueues.put("Q.BIG", 2);
        x.expectQueues.put("Q.REDELIVER", 5);
        x.expectQueues.put("Q.TRANSIENT", 0);
        x.notes.put("Q.REMOVED", "removed: must not be listed");
        x.notes.put("Q.PRIO order", "recovered in priority-class order: HI (>4) by seq, then 4, then LO (<4)");
    }

    static void topics(Ctx x) throws Exception {
        x.start(null);
        ActiveMQTopic news = new ActiveMQTopic("T.NEWS");
        ActiveMQTopic all = new ActiveMQTopic("T.ALL");
        createDurable(x, "c-all", "s-all", all, null);
        Connection pc = x.conn(null);
        Session ps = pc.createSession(false, Session.AUTO_ACKNOWLEDGE);
        send(ps, all, "T.ALL", 0, 30, 200, null);
        consumeDurable(x, "c-all", "s-all", all, null, 30);
        x.step("c-all:s-all created on T.ALL; 30 sent to T.ALL and consumed by c-all (fills db-1.log)");

        createDurable(x, "c-early", "s-early", news, null);
        createDurable(x, "c-unsub", "s-unsub", news, null);
        createDurable(x, "c-sel", "s-sel", news, "parity = 'even'");
        x.step("durable subs created on T.NEWS: c-early:s-early, c-unsub:s-unsub, c-sel:s-sel (parity = 'even')");
        send(ps, news, "T.NEWS", 0, 20, 200, null);
        x.step("sent 20 to T.NEWS");
        createDurable(x, "c-late", "s-late", news, null);
        x.step("durable sub c-late:s-late created on T.NEWS");
        send(ps, news, "T.NEWS", 20, 20, 200, null);
        x.step("sent 20 more to T.NEWS");

        consumeDurable(x, "c-early", "s-early", news, null, 25);
        consumeDurable(x, "c-sel", "s-sel", news, "parity = 'even'", 5);
        consumeDurable(x, "c-late", "s-late", news, null, 3);
        consumeDurable(x, "c-unsub", "s-unsub", news, null, 10);
        {
            Connection c = x.conn("c-unsub");
            Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
            s.unsubscribe("s-unsub");
            c.close();
        }
        x.step("consumed: c-early 25, c-sel 5, c-late 3, c-unsub 10 then unsubscribed");
        pc.close();
        // c-all has nothing pending and its subscription record is in the first candidate file:
        // the GC rewrites it ("Found candidate for rewrite") instead of keeping db-1.log
        x.gc();
        x.stop();
        x.start(null);
        x.step("restarted (a second LOADED trace)");
        pc = x.conn(null);
        ps = pc.createSession(false, Session.AUTO_ACKNOWLEDGE);
        send(ps, all, "T.ALL", 30, 60, 200, null);
        consumeDurable(x, "c-all", "s-all", all, null, 60);
        x.step("T.ALL: 60 more sent and consumed by c-all (garbage for the next start)");
        pc.close();
        x.stop();

        // with prefetch 1 and AUTO_ACK the extra prefetched message is not acked
        x.expectSubCounts.put("topic://T.NEWS|c-early:s-early", 15);
        x.expectSubCounts.put("topic://T.NEWS|c-sel:s-sel", 15);
        x.expectSubCounts.put("topic://T.NEWS|c-late:s-late", 17);
        x.expectSubCounts.put("topic://T.ALL|c-all:s-all", 0);
        x.expectSubs.put("topic://T.NEWS|c-early:s-early", 15);
        x.expectSubs.put("topic://T.NEWS|c-late:s-late", 17);
        x.expectSubs.put("topic://T.ALL|c-all:s-all", 0);
        x.notes.put("c-unsub:s-unsub", "deleted: must not be listed");
        x.notes.put("c-late:s-late", "created after T.NEWS #0..#19: only #20..#39 are for it");
        x.notes.put("c-sel:s-sel", "count 15 (even #10..#38) but recoverSubscription returns every still-indexed "
                + "T.NEWS message after its last matched ack (#8), odd ones included: the selector's unmatched acks "
                + "(empty ack) do not move lastAck at runtime, so min(pending) > lastAck and the broker takes the "
                + "'everything after lastAck' path; the selector filters at dispatch");
    }

    static void createDurable(Ctx x, String cid, String name, Topic t, String sel) throws Exception {
        Connection c = x.conn(cid);
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        s.createDurableSubscriber(t, name, sel, false).close();
        c.close();
    }

    static void consumeDurable(Ctx x, String cid, String name, Topic t, String sel, int n) throws Exception {
        Connection c = x.conn(cid);
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageConsumer mc = s.createDurableSubscriber(t, name, sel, false);
        receive(mc, n);
        mc.close();
        c.close();
    }

    static void tx(Ctx x) throws Exception {
        x.start(null);
        ActiveMQQueue qtx = new ActiveMQQueue("Q.TX");
        ActiveMQTopic ttx = new ActiveMQTopic("T.TX");
        ActiveMQQueue qxa = new ActiveMQQueue("Q.XA");
        createDurable(x, "c-tx", "s-tx", ttx, null);
        createDurable(x, "c-xa", "s-xa", ttx, null);
        x.step("durable subs c-tx:s-tx and c-xa:s-xa created on T.TX");

        // the transaction that will be left prepared starts early, so its records span several files
        ActiveMQXAConnectionFactory xf = x.xacf();
        XAConnection xc2 = xf.createXAConnection();
        xc2.setClientID("c-xa");
        xc2.start();
        XASession xs2 = xc2.createXASession();
        XAResource xr2 = xs2.getXAResource();
        Session s2 = xs2.getSession();
        SimpleXid x4 = new SimpleXid("gtrid-prepared", "bq-4");
        xr2.start(x4, XAResource.TMNOFLAGS);
        List<String> adds = new ArrayList<>(send(s2, qxa, "Q.XA-prepared", 30, 1, 150, null));
        x.step("XA gtrid-prepared started: 1 send to Q.XA");

        Connection c = x.conn(null);
        Session ts = c.createSession(true, Session.SESSION_TRANSACTED);
        for (int b = 0; b < 5; b++) {
            send(ts, qtx, "Q.TX", b * 10, 10, 300, null);
            ts.commit();
        }
        send(ts, qtx, "Q.TX-rolledback", 100, 3, 300, null);
        ts.rollback();
        send(ts, ttx, "T.TX", 0, 4, 150, null);
        ts.commit();
        send(ts, ttx, "T.TX-rolledback", 100, 2, 150, null);
        ts.rollback();
        MessageConsumer mc = ts.createConsumer(qtx);
        receive(mc, 10);
        ts.commit();
        receive(mc, 10);
        ts.commit();
        receive(mc, 2);
        ts.rollback();
        mc.close();
        ts.close();
        c.close();
        x.step("local tx: Q.TX 5 x 10 sent+commit, 3 sent+rollback, 2 x 10 received+commit, 2 received+rollback; "
                + "T.TX 4 sent+commit, 2 sent+rollback");
        {
            Connection dc = x.conn("c-tx");
            Session ds = dc.createSession(true, Session.SESSION_TRANSACTED);
            MessageConsumer d = ds.createDurableSubscriber(ttx, "s-tx");
            receive(d, 2);
            ds.commit();
            d.close();
            ds.close();
            dc.close();
        }
        x.step("local tx: c-tx:s-tx received 2 + commit");

        XAConnection xc = xf.createXAConnection();
        xc.start();
        XASession xs = xc.createXASession();
        XAResource xr = xs.getXAResource();
        Session s = xs.getSession();

        SimpleXid x1 = new SimpleXid("gtrid-commit", "bq-1");
        xr.start(x1, XAResource.TMNOFLAGS);
        send(s, qxa, "Q.XA-commit", 0, 3, 150, null);
        xr.end(x1, XAResource.TMSUCCESS);
        xr.prepare(x1);
        xr.commit(x1, false);

        SimpleXid x2 = new SimpleXid("gtrid-rollback", "bq-2");
        xr.start(x2, XAResource.TMNOFLAGS);
        send(s, qxa, "Q.XA-rollback", 10, 2, 150, null);
        xr.end(x2, XAResource.TMSUCCESS);
        xr.prepare(x2);
        xr.rollback(x2);

        SimpleXid x3 = new SimpleXid("gtrid-onephase", "bq-3");
        xr.start(x3, XAResource.TMNOFLAGS);
        send(s, qxa, "Q.XA-onephase", 20, 1, 150, null);
        xr.end(x3, XAResource.TMSUCCESS);
        xr.commit(x3, true);
        x.step("XA: gtrid-commit 3 sends prepare+commit; gtrid-rollback 2 sends prepare+rollback; "
                + "gtrid-onephase 1 send one-phase commit");
        xs.close();
        xc.close();

        adds.addAll(send(s2, qxa, "Q.XA-prepared", 31, 1, 150, null));
        MessageConsumer qc = s2.createConsumer(qxa);
        List<Message> qAck = receive(qc, 1);
        MessageConsumer tc = s2.createDurableSubscriber(ttx, "s-xa");
        List<Message> tAck = receive(tc, 1);
        xr2.end(x4, XAResource.TMSUCCESS);
        int vote = xr2.prepare(x4);
        qc.close();
        tc.close();
        xs2.close();
        xc2.close();
        x.step("XA: gtrid-prepared 1 more send to Q.XA + ack of 1 Q.XA message + ack of 1 T.TX message (c-xa:s-xa), "
                + "prepared (vote " + vote + ") and left prepared");
        x.stop();

        x.expectQueues.put("Q.TX", 30);
        x.expectSubCounts.put("topic://T.TX|c-tx:s-tx", 2);
        x.expectPrepared.add(x4.brokerString());
        x.expectNotPrepared.add(x1.brokerString());
        x.expectNotPrepared.add(x2.brokerString());
        x.expectNotPrepared.add(x3.brokerString());
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("xid", x4.brokerString());
        p.put("adds", adds);
        p.put("acks", Arrays.asList(qAck.get(0).getJMSMessageID(), tAck.get(0).getJMSMessageID()));
        x.notes.put("prepared", p);
        x.notes.put("Q.XA", "4 committed (gtrid-commit 3, gtrid-onephase 1); the first is acked inside the prepared tx");
        x.notes.put("T.TX c-xa:s-xa", "4 committed; the first is acked inside the prepared tx");
    }

    static void crash(Ctx x) throws Exception {
        x.start(null);
        Connection c = x.conn(null);
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        ActiveMQQueue q = new ActiveMQQueue("Q.CRASH");
        ActiveMQQueue more = new ActiveMQQueue("Q.CRASH.MORE");
        ActiveMQQueue qxa = new ActiveMQQueue("Q.CRASH.XA");
        send(s, q, "Q.CRASH", 0, 40, 300, null);
        MessageConsumer mc = s.createConsumer(q);
        receive(mc, 30);
        mc.close();
        x.step("Q.CRASH: 40 sent, 30 consumed");
        x.gc();
        send(s, more, "Q.CRASH.MORE", 0, 60, 300, null);
        mc = s.createConsumer(more);
        receive(mc, 60);
        mc.close();
        x.step("Q.CRASH.MORE: 60 sent, 60 consumed (garbage for the next start)");

        Session ts = c.createSession(true, Session.SESSION_TRANSACTED);
        send(ts, q, "Q.CRASH-inflight", 100, 3, 150, null);
        MessageConsumer tc = ts.createConsumer(q);
        receive(tc, 2);
        x.step("local tx: 3 sends to Q.CRASH + 2 receives from Q.CRASH, not committed");

        XAConnection xc = x.xacf().createXAConnection();
        xc.start();
        XASession xs = xc.createXASession();
        XAResource xr = xs.getXAResource();
        SimpleXid xp = new SimpleXid("gtrid-crash-prepared", "bq-7");
        xr.start(xp, XAResource.TMNOFLAGS);
        List<String> adds = send(xs.getSession(), qxa, "Q.CRASH.XA-prepared", 0, 1, 150, null);
        xr.end(xp, XAResource.TMSUCCESS);
        xr.prepare(xp);
        SimpleXid xi = new SimpleXid("gtrid-inflight", "bq-9");
        xr.start(xi, XAResource.TMNOFLAGS);
        send(xs.getSession(), qxa, "Q.CRASH.XA-inflight", 10, 2, 150, null);
        xr.end(xi, XAResource.TMSUCCESS);
        x.step("XA: gtrid-crash-prepared (1 send) prepared; gtrid-inflight (2 sends) ended, not prepared");

        x.expectQueues.put("Q.CRASH", 10);
        x.expectQueues.put("Q.CRASH.MORE", 0);
        x.expectQueues.put("Q.CRASH.XA", 0);
        x.expectPrepared.add(xp.brokerString());
        x.expectNotPrepared.add(xi.brokerString());
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("xid", xp.brokerString());
        p.put("adds", adds);
        x.notes.put("prepared", p);
        x.notes.put("local tx", "in flight at the crash: rolled back by the next start (KAHA_ROLLBACK_COMMAND appended)");

        sleep(500); // let the journal appender thread write (halt does not lose the page cache)
        x.step("Runtime.halt(" + HALT_EXIT_CODE + ")");
        x.writeRun(true);
        Logs.flush();
        System.out.flush();
        Runtime.getRuntime().halt(HALT_EXIT_CODE);
    }

    static void ackcompact(Ctx x) throws Exception {
        x.start(null);
        Connection c = x.conn(null);
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        ActiveMQQueue pin = new ActiveMQQueue("Q.PIN");
        ActiveMQQueue work = new ActiveMQQueue("Q.WORK");
        ActiveMQQueue fill = new ActiveMQQueue("Q.FILL");
        send(s, pin, "Q.PIN", 0, 1, 150, null);
        send(s, work, "Q.WORK", 0, 100, 300, null);
        x.step("sent 1 to Q.PIN, 100 to Q.WORK");
        MessageConsumer mc = s.createConsumer(work);
        receive(mc, 100);
        mc.close();
        x.step("consumed 100 from Q.WORK");
        send(s, fill, "Q.FILL", 0, 40, 300, null);
        mc = s.createConsumer(fill);
        receive(mc, 40);
        mc.close();
        x.step("Q.FILL: 40 sent and consumed");
        x.gc();
        // cleanup cycles that delete nothing -> ack compaction after compactAcksAfterNoGC (2) of them
        long deadline = System.currentTimeMillis() + 20000;
        int cycles = 0;
        while (Logs.reservedLines().isEmpty() && System.currentTimeMillis() < deadline && cycles < 12) {
            x.gc();
            cycles++;
            long w = System.currentTimeMillis() + 300;
            while (Logs.reservedLines().isEmpty() && System.currentTimeMillis() < w) sleep(10);
        }
        if (Logs.reservedLines().isEmpty()) throw new IllegalStateException("no ack compaction after " + cycles + " cycles");
        // wait for the compaction to finish (its last TRACE line), then stop
        long w = System.currentTimeMillis() + 5000;
        while (Logs.linesContaining("ACK File Map following updates").isEmpty() && System.currentTimeMillis() < w) sleep(10);
        sleep(200);
        x.step("ack compaction: Reserved file for forwarded acks: " + Logs.reservedLines());
        c.close();
        x.stop();
        x.expectQueues.put("Q.PIN", 1);
        x.expectQueues.put("Q.WORK", 0);
        x.expectQueues.put("Q.FILL", 0);
        x.notes.put("compaction", "the reserved file starts with KAHA_REWRITTEN_DATA_FILE_COMMAND{sourceDataFileId=X}; "
                + "the source file X is still in the store (stopped without cleanup)");
    }

    // ------------------------------------------------------------------------------------------------
    // checks (run in the parent after generation)

    @SuppressWarnings("unchecked")
    static List<String> check(String name, String runText, String inspectText, Records.Result rec) {
        List<String> p = new ArrayList<>();
        Map<String, Object> run = (Map<String, Object>) Json.parse(runText);
        Map<String, Object> ins = (Map<String, Object>) Json.parse(inspectText);
        Map<String, Object> exp = (Map<String, Object>) run.get("expect");
        Map<String, Object> queues = (Map<String, Object>) ins.get("queues");
        Map<String, Object> subs = (Map<String, Object>) ins.get("subscriptions");
        for (Map.Entry<String, Object> e : ((Map<String, Object>) exp.get("queuePendingCounts")).entrySet()) {
            List<Object> got = (List<Object>) queues.get(e.getKey());
            long n = got == null ? 0 : got.size();
            if (n != ((Number) e.getValue()).longValue()) {
                p.add("queue " + e.getKey() + ": recovered " + n + " messages, expected " + e.getValue());
            }
        }
        for (Map.Entry<String, Object> e : ((Map<String, Object>) exp.get("subscriptionPendingCounts")).entrySet()) {
            Map<String, Object> sub = (Map<String, Object>) subs.get(e.getKey());
            if (sub == null) {
                p.add("subscription " + e.getKey() + " not recovered");
                continue;
            }
            long n = ((List<Object>) sub.get("pending")).size();
            if (n != ((Number) e.getValue()).longValue()) {
                p.add("subscription " + e.getKey() + ": recovered " + n + " pending, expected " + e.getValue());
            }
        }
        for (Map.Entry<String, Object> e : ((Map<String, Object>) exp.get("subscriptionMessageCounts")).entrySet()) {
            Map<String, Object> sub = (Map<String, Object>) subs.get(e.getKey());
            if (sub == null) {
                p.add("subscription " + e.getKey() + " not recovered");
                continue;
            }
            long n = ((Number) sub.get("count")).longValue();
            if (n != ((Number) e.getValue()).longValue()) {
                p.add("subscription " + e.getKey() + ": getMessageCount " + n + ", expected " + e.getValue());
            }
        }
        List<String> xids = new ArrayList<>();
        for (Object o : (List<Object>) ins.get("prepared")) xids.add((String) ((Map<String, Object>) o).get("xid"));
        for (Object o : (List<Object>) exp.get("preparedXids")) {
            if (!xids.contains(o)) p.add("prepared transaction " + o + " not recovered (got " + xids + ")");
        }
        for (Object o : (List<Object>) exp.get("notPreparedXids")) {
            if (xids.contains(o)) p.add("transaction " + o + " recovered as prepared");
        }
        List<Object> deleted = (List<Object>) ins.get("deleted");
        if (Fidelity.has(name)) p.addAll(Fidelity.check(name, rec, run, ins));
        boolean wantGarbage = name.equals("queues") || name.equals("topics") || name.equals("crash") || name.equals("ackcompact");
        if (wantGarbage && deleted.isEmpty()) p.add("expected the restarted broker to delete garbage files, it deleted none");
        String[] need;
        switch (name) {
            case "queues": need = new String[]{"KAHA_UPDATE_MESSAGE_COMMAND", "KAHA_REMOVE_DESTINATION_COMMAND"}; break;
            case "topics": need = new String[]{"KAHA_SUBSCRIPTION_COMMAND"}; break;
            case "tx": need = new String[]{"KAHA_PREPARE_COMMAND", "KAHA_COMMIT_COMMAND", "KAHA_ROLLBACK_COMMAND"}; break;
            case "ackcompact": need = new String[]{"KAHA_REWRITTEN_DATA_FILE_COMMAND"}; break;
            case "hostile": need = new String[]{"KAHA_SUBSCRIPTION_COMMAND", "KAHA_REMOVE_MESSAGE_COMMAND", "KAHA_COMMIT_COMMAND"}; break;
            case "messages": need = new String[]{"KAHA_UPDATE_MESSAGE_COMMAND", "KAHA_REMOVE_MESSAGE_COMMAND"}; break;
            default: need = new String[0];
        }
        for (String t : need) if (!rec.counts.containsKey(t)) p.add("no " + t + " record in the final store");
        return p;
    }
}
