import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

import javax.jms.Connection;
import javax.jms.DeliveryMode;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.MessageProducer;
import javax.jms.Session;
import javax.jms.TextMessage;
import javax.jms.TopicSubscriber;
import javax.jms.XAConnection;
import javax.jms.XASession;
import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;

import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.ActiveMQXAConnectionFactory;
import org.apache.activemq.ScheduledMessage;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.broker.region.policy.PolicyEntry;
import org.apache.activemq.broker.region.policy.PolicyMap;
import org.apache.activemq.command.ActiveMQQueue;
import org.apache.activemq.command.ActiveMQTopic;
import org.apache.activemq.command.XATransactionId;
import org.apache.activemq.store.kahadb.FilteredKahaDBPersistenceAdapter;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;
import org.apache.activemq.store.kahadb.MultiKahaDBPersistenceAdapter;
import org.apache.activemq.store.kahadb.scheduler.JobSchedulerStoreImpl;

/**
 * A broker data directory with an mKahaDB store (MultiKahaDBPersistenceAdapter) and a job scheduler store,
 * made by a real embedded broker, and the oracle that says what a broker restarted on it deletes.
 *
 * Usage:
 *   MultiStore generate OUTDIR MODE   -> OUTDIR/data/{mKahaDB,scheduler}, OUTDIR/layout.json (with "inspect")
 *   MultiStore inspect DATA_DIR OUT.json MODE  (MODIFIES DATA_DIR: run it on a copy)
 *   MultiStore hold DATA_DIR MODE   a broker running on DATA_DIR: prints "HOLDING pid", stops at EOF on stdin
 *
 * mKahaDB filters (every store journalMaxFileLength 16384, no preallocation, GC only through explicit
 * checkpoints): queue ORDERS.&gt; , topic EVENTS.&gt; and the catch-all (a filter without destination): with
 * MODE filtered one store (#210), with MODE perdest perDestination=true, one store per destination
 * (5.17.2 honours perDestination only on a filter without destination: on one with a destination it puts
 * that store in mKahaDB/ itself). The transaction store (txStore/) has the same journalMaxFileLength.
 *
 * Workload: ORDERS.A 40 sends of 600 bytes, 36 consumed (garbage files, 4 pending at the end); EVENTS.X a
 * durable subscription c-ev:s-ev that acknowledges 10 of 20; PER.A and PER.B 3 messages each, PER.B drained
 * afterwards; OTHER (catch-all) 30 sends, all consumed, then 2 more; an XA transaction gtrid-commit across
 * ORDERS.B, PER.A and OTHER (two-phase commit: an outcome in txStore); a local transaction across ORDERS.B and
 * OTHER committed; an XA transaction gtrid-prepared sending to ORDERS.B and PER.A and acknowledging one OTHER
 * message, left PREPARED; a message scheduled 1 day ahead (scheduler store). The broker stops with
 * cleanupOnStop=false, so the garbage is still there for the oracle's cleanup.
 *
 * inspect starts a full broker (no connectors, JMX off) with the same configuration on a copy, every KahaDB
 * store's cleanupOnStop true and its periodic cleanup off, the transaction store's periodic cleanup every
 * 200 ms; recovers, waits 1.5 s (the transaction store's cleanup), stops, and reports per store directory the
 * data files before and after and those deleted, and the prepared XIDs.
 */
public final class MultiStore {
    private MultiStore() {}

    static final int MAX_LEN = 16384;
    static final int FMT = 4660;

    public static void main(String[] args) throws Exception {
        if (args.length >= 3 && args[0].equals("generate")) {
            generate(new File(args[1]), mode(args[2]));
        } else if (args.length >= 3 && args[0].equals("hold")) {
            // a running broker on DATA_DIR until standard input closes
            BrokerService b = broker(new File(args[1]), mode(args[2]), true);
            b.start();
            b.waitUntilStarted();
            System.out.println("HOLDING " + ProcessHandle.current().pid());
            System.out.flush();
            java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
            while (in.readLine() != null) {
                // wait for EOF
            }
            b.stop();
            b.waitUntilStopped();
        } else if (args.length >= 4 && args[0].equals("inspect")) {
            String json = inspect(new File(args[1]), mode(args[3]));
            Files.write(new File(args[2]).toPath(), json.getBytes(StandardCharsets.UTF_8));
        } else {
            System.err.println("usage: MultiStore generate OUTDIR filtered|perdest | MultiStore inspect DATA_DIR OUT.json filtered|perdest");
            System.exit(2);
        }
        System.exit(0);
    }

    static boolean mode(String m) {
        if (m.equals("perdest")) return true;
        if (m.equals("filtered")) return false;
        throw new IllegalArgumentException("mode: filtered or perdest, not " + m);
    }

    static KahaDBPersistenceAdapter template(boolean forInspect) {
        KahaDBPersistenceAdapter k = new KahaDBPersistenceAdapter();
        k.setJournalMaxFileLength(MAX_LEN);
        k.setPreallocationScope("none");
        // The mKahaDB adapter holds mKahaDB/lock; a per-destination store made from this template would
        // otherwise wait for that lock forever (its locker copied from the template by kahaDBFromTemplate).
        k.setUseLock(false);
        if (forInspect) {
            k.setCheckpointInterval(0);
            k.setCleanupInterval(0);
        } else {
            k.setCheckpointInterval(3600_000L);
            k.setCleanupInterval(3600_000L);
            k.setCleanupOnStop(false);
        }
        return k;
    }

    static FilteredKahaDBPersistenceAdapter filter(Object dest, boolean perDest, boolean forInspect) {
        FilteredKahaDBPersistenceAdapter f = new FilteredKahaDBPersistenceAdapter();
        if (dest instanceof ActiveMQQueue) f.setQueue(((ActiveMQQueue) dest).getPhysicalName());
        if (dest instanceof ActiveMQTopic) f.setTopic(((ActiveMQTopic) dest).getPhysicalName());
        f.setPerDestination(perDest);
        f.setPersistenceAdapter(template(forInspect));
        return f;
    }

    static BrokerService broker(File data, boolean perDest, boolean forInspect) throws Exception {
        BrokerService b = new BrokerService();
        b.setBrokerName("multi");
        b.setUseJmx(false);
        b.setAdvisorySupport(false);
        b.setDataDirectoryFile(data);
        b.setSchedulerSupport(true);
        JobSchedulerStoreImpl js = new JobSchedulerStoreImpl();
        js.setDirectory(new File(data, "scheduler"));
        js.setJournalMaxFileLength(MAX_LEN);
        b.setJobSchedulerStore(js);
        MultiKahaDBPersistenceAdapter m = new MultiKahaDBPersistenceAdapter();
        m.setDirectory(new File(data, "mKahaDB"));
        m.setJournalMaxFileLength(MAX_LEN);
        m.setJournalCleanupInterval(forInspect ? 200 : 3600_000L);
        List<FilteredKahaDBPersistenceAdapter> fs = new ArrayList<>();
        fs.add(filter(new ActiveMQQueue("ORDERS.>"), false, forInspect));
        fs.add(filter(new ActiveMQTopic("EVENTS.>"), false, forInspect));
        // perDestination applies only to a filter without destination (getMatchingPersistenceAdapter): the
        // catch-all, one store per destination; else one catch-all store (#210).
        fs.add(filter(null, perDest, forInspect));
        m.setFilteredPersistenceAdapters(fs);
        b.setPersistenceAdapter(m);
        PolicyEntry pe = new PolicyEntry();
        pe.setExpireMessagesPeriod(0);
        PolicyMap pm = new PolicyMap();
        pm.setDefaultEntry(pe);
        b.setDestinationPolicy(pm);
        return b;
    }

    static final class SimpleXid implements Xid {
        final byte[] g, q;
        SimpleXid(String g, String q) {
            this.g = g.getBytes(StandardCharsets.UTF_8);
            this.q = q.getBytes(StandardCharsets.UTF_8);
        }
        @Override public int getFormatId() { return FMT; }
        @Override public byte[] getGlobalTransactionId() { return g; }
        @Override public byte[] getBranchQualifier() { return q; }
    }

    static String body(String tag, int i, int size) {
        StringBuilder sb = new StringBuilder(tag).append('-').append(i).append(':');
        while (sb.length() < size) sb.append('x');
        return sb.toString();
    }

    static void send(Session s, javax.jms.Destination d, String tag, int n, int size) throws Exception {
        MessageProducer p = s.createProducer(d);
        p.setDeliveryMode(DeliveryMode.PERSISTENT);
        for (int i = 0; i < n; i++) p.send(s.createTextMessage(body(tag, i, size)));
        p.close();
    }

    static int receive(MessageConsumer c, int n) throws Exception {
        int got = 0;
        for (int i = 0; i < n; i++) {
            Message m = c.receive(2000);
            if (m == null) break;
            got++;
        }
        return got;
    }

    static void generate(File out, boolean perDest) throws Exception {
        File data = new File(out, "data");
        if (data.exists()) throw new IllegalStateException(data + " exists");
        Files.createDirectories(out.toPath());
        Map<String, Object> notes = new LinkedHashMap<>();
        BrokerService b = broker(data, perDest, false);
        b.start();
        b.waitUntilStarted();
        String url = "vm://multi?create=false&jms.prefetchPolicy.all=1";
        ActiveMQConnectionFactory cf = new ActiveMQConnectionFactory(url);
        cf.setUseAsyncSend(false);
        Connection c = cf.createConnection();
        c.setClientID("c-ev");
        c.start();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        ActiveMQQueue orders = new ActiveMQQueue("ORDERS.A");
        ActiveMQQueue ordersB = new ActiveMQQueue("ORDERS.B");
        ActiveMQTopic events = new ActiveMQTopic("EVENTS.X");
        ActiveMQQueue perA = new ActiveMQQueue("PER.A");
        ActiveMQQueue perB = new ActiveMQQueue("PER.B");
        ActiveMQQueue other = new ActiveMQQueue("OTHER");

        TopicSubscriber sub = s.createDurableSubscriber(events, "s-ev");
        send(s, orders, "orders", 40, 600);
        MessageConsumer oc = s.createConsumer(orders);
        notes.put("ORDERS.A consumed", receive(oc, 36));
        oc.close();
        send(s, events, "events", 20, 400);
        notes.put("EVENTS.X delivered to c-ev:s-ev", receive(sub, 10));
        sub.close();
        send(s, perA, "perA", 3, 300);
        send(s, perB, "perB", 3, 300);
        MessageConsumer pc = s.createConsumer(perB);
        notes.put("PER.B consumed", receive(pc, 3));
        pc.close();
        send(s, other, "other", 30, 600);
        MessageConsumer xc0 = s.createConsumer(other);
        notes.put("OTHER consumed", receive(xc0, 30));
        xc0.close();
        send(s, other, "other-late", 2, 300);

        // local transaction across two stores
        Session ts = c.createSession(true, Session.SESSION_TRANSACTED);
        send(ts, ordersB, "local-ordersB", 1, 200);
        send(ts, other, "local-other", 1, 200);
        ts.commit();
        ts.close();

        ActiveMQXAConnectionFactory xf = new ActiveMQXAConnectionFactory(url);
        XAConnection xc = xf.createXAConnection();
        xc.start();
        XASession xs = xc.createXASession();
        XAResource xr = xs.getXAResource();
        Session xss = xs.getSession();
        SimpleXid commit = new SimpleXid("gtrid-commit", "bq-1");
        xr.start(commit, XAResource.TMNOFLAGS);
        send(xss, ordersB, "xa-commit-ordersB", 1, 200);
        send(xss, perA, "xa-commit-perA", 1, 200);
        send(xss, other, "xa-commit-other", 1, 200);
        xr.end(commit, XAResource.TMSUCCESS);
        xr.prepare(commit);
        xr.commit(commit, false);

        SimpleXid prep = new SimpleXid("gtrid-prepared", "bq-2");
        xr.start(prep, XAResource.TMNOFLAGS);
        send(xss, ordersB, "xa-prepared-ordersB", 1, 200);
        send(xss, perA, "xa-prepared-perA", 1, 200);
        MessageConsumer xo = xss.createConsumer(other);
        notes.put("OTHER received in gtrid-prepared", receive(xo, 1));
        xo.close();
        xr.end(prep, XAResource.TMSUCCESS);
        xr.prepare(prep);
        notes.put("prepared", new XATransactionId(prep).toString());
        xc.close();

        MessageProducer sp = s.createProducer(new ActiveMQQueue("DELAYED"));
        TextMessage tm = s.createTextMessage("scheduled a day ahead");
        tm.setLongProperty(ScheduledMessage.AMQ_SCHEDULED_DELAY, 86_400_000L);
        sp.send(tm);
        sp.close();
        c.close();
        b.stop();
        b.waitUntilStopped();

        // The oracle on a copy.
        File copy = Files.createTempDirectory("multistore").toFile();
        copyDir(data, copy);
        String insp = inspect(copy, perDest);

        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("scenario", perDest ? "mkahadb-perdest" : "mkahadb");
        doc.put("description", "A broker data directory (data/) with mKahaDB/ (filters queue ORDERS.>, topic EVENTS.>, "
                + (perDest ? "the catch-all with perDestination=true (one store per destination)" : "the catch-all (#210)")
                + "; txStore/) and scheduler/. See MultiStore.java.");
        doc.put("mode", perDest ? "perdest" : "filtered");
        doc.put("activemqVersion", org.apache.activemq.ActiveMQConnectionMetaData.PROVIDER_VERSION);
        doc.put("journalMaxFileLength", MAX_LEN);
        doc.put("notes", notes);
        doc.put("stores", storeFiles(data));
        doc.put("inspect", Json.parse(insp));
        Files.write(new File(out, "layout.json").toPath(), Json.write(doc).getBytes(StandardCharsets.UTF_8));
        System.out.println("MultiStore: wrote " + out);
    }

    static void copyDir(File src, File dst) throws Exception {
        Files.createDirectories(dst.toPath());
        File[] fs = src.listFiles();
        if (fs == null) return;
        for (File f : fs) {
            File d = new File(dst, f.getName());
            if (f.isDirectory()) copyDir(f, d);
            else Files.copy(f.toPath(), d.toPath());
        }
    }

    /** Every directory below data that holds db-N.log files, by path relative to data, with their ids. */
    static Map<String, Object> storeFiles(File data) {
        Map<String, Object> m = new TreeMap<>();
        walk(data, "", m);
        return m;
    }

    static void walk(File dir, String rel, Map<String, Object> m) {
        TreeSet<Integer> ids = Inspect.fileIds(dir);
        if (!ids.isEmpty()) m.put(rel, new ArrayList<>(ids));
        File[] fs = dir.listFiles();
        if (fs == null) return;
        for (File f : fs) {
            if (f.isDirectory()) walk(f, rel.isEmpty() ? f.getName() : rel + "/" + f.getName(), m);
        }
    }

    static String inspect(File data, boolean perDest) throws Exception {
        Map<String, Object> before = storeFiles(data);
        BrokerService b = broker(data, perDest, true);
        final List<String> prepared = new ArrayList<>();
        b.start();
        b.waitUntilStarted();
        for (org.apache.activemq.command.TransactionId t : b.getBroker().getPreparedTransactions(null)) {
            prepared.add(t.toString());
        }
        Thread.sleep(1500);
        b.stop();
        b.waitUntilStopped();
        Map<String, Object> after = storeFiles(data);
        Map<String, Object> stores = new TreeMap<>();
        for (String k : before.keySet()) {
            @SuppressWarnings("unchecked") List<Integer> bf = (List<Integer>) before.get(k);
            @SuppressWarnings("unchecked") List<Integer> af = (List<Integer>) after.getOrDefault(k, new ArrayList<Integer>());
            List<Integer> del = new ArrayList<>(bf);
            del.removeAll(af);
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("filesBefore", bf);
            e.put("filesAfter", af);
            e.put("deleted", del);
            stores.put(k, e);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("maxFileLength", MAX_LEN);
        out.put("stores", stores);
        out.put("prepared", prepared);
        return Json.write(out);
    }
}
