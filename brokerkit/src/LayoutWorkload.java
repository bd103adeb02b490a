import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;

import javax.jms.Connection;
import javax.jms.DeliveryMode;
import javax.jms.Destination;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.MessageProducer;
import javax.jms.Session;
import javax.jms.TextMessage;
import javax.jms.TopicSubscriber;
import javax.jms.XAConnection;
import javax.jms.XASession;
import javax.transaction.xa.XAResource;

import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.ActiveMQXAConnectionFactory;
import org.apache.activemq.ScheduledMessage;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.broker.region.policy.PolicyEntry;
import org.apache.activemq.broker.region.policy.PolicyMap;
import org.apache.activemq.broker.scheduler.Job;
import org.apache.activemq.broker.scheduler.JobScheduler;
import org.apache.activemq.command.ActiveMQDestination;
import org.apache.activemq.command.ActiveMQQueue;
import org.apache.activemq.command.ActiveMQTopic;
import org.apache.activemq.command.MessageAck;
import org.apache.activemq.command.SubscriptionInfo;
import org.apache.activemq.command.XATransactionId;
import org.apache.activemq.openwire.OpenWireFormat;
import org.apache.activemq.store.MessageStore;
import org.apache.activemq.store.PersistenceAdapter;
import org.apache.activemq.store.TopicMessageStore;
import org.apache.activemq.store.TransactionRecoveryListener;
import org.apache.activemq.store.kahadb.FilteredKahaDBPersistenceAdapter;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;
import org.apache.activemq.store.kahadb.MultiKahaDBPersistenceAdapter;
import org.apache.activemq.store.kahadb.scheduler.JobSchedulerStoreImpl;
import org.apache.activemq.util.ByteSequence;

/**
 * Seeded random workloads on the multi-store layouts of a broker data directory, for the differential test
 * (internal/difftest, layout seeds), and the oracle that reads such a directory back.
 *
 * Usage:
 *   LayoutWorkload run OUTDIR --seed N --kind mkahadb|scheduler [--ops K]
 *       -> OUTDIR/data (the broker's data directory), OUTDIR/workload.json, OUTDIR/logs/run.log
 *   LayoutWorkload view DATA_DIR OUT.json --kind K --mode M [--log FILE]   (MODIFIES DATA_DIR: run it on a copy)
 *
 * Kinds. mkahadb: DATA/mKahaDB (MultiKahaDBPersistenceAdapter) with the filters of MultiStore (queue ORDERS.&gt;,
 * topic EVENTS.&gt;, the catch-all: one store #210 (mode filtered) or one per destination (perdest), as the
 * seed chooses) and txStore/: sends, consumes, durable subscriptions, local transactions spanning stores
 * (committed or rolled back), XA transactions spanning stores (two-phase commit, one-phase commit,
 * prepare+rollback, rollback, left prepared and maybe resolved later), explicit checkpoints, sleeps.
 * scheduler: DATA/kahadb (one KahaDB store) and DATA/scheduler (JobSchedulerStoreImpl, journalMaxFileLength
 * 16 KiB, as every store of the layout): plain sends and consumes, delayed jobs that fire (100-1500 ms) or stay (1-2 h), repeating jobs that
 * fire and end or stay, cron jobs (pending), removes of one job (JobScheduler.remove) and of a time range
 * (removeAllJobs), sleeps that let jobs fire. Every KahaDB journal is 16 KiB at most. Periodic checkpoints and
 * cleanups, cleanupOnStop and the end (clean stop or Runtime.halt, 35 %; before a kill a local transaction may
 * be left open) are the seed's. Operations are chosen from java.util.Random(seed) as the run goes; what they
 * find (messages received, jobs removed) is recorded in workload.json's steps.
 *
 * view starts a full broker on DATA_DIR with the same layout (no connectors, JMX off, scheduler support off so
 * that no job fires; every KahaDB store's periodic checkpoint and cleanup off and cleanupOnStop true; the
 * transaction store's periodic cleanup every 200 ms), records per destination what the store recovers
 * (MessageStore.recover, the count), per durable subscription (recoverSubscription, the count), the prepared
 * transactions (Broker.getPreparedTransactions, and TransactionStore.recover: a transaction spanning stores
 * is reported once per store, merged here), waits 1.5 s, stops it (each store's stop-time cleanup), then opens
 * the scheduler store (if any) standalone (as SchedulerCleanup: no job fires), lists its jobs and stops it
 * (its cleanup). Output: {"stores":{REL:{filesBefore,filesAfter,deleted}}, "queues":{Q:{count,pending}},
 * "subscriptions":{"topic://T|cid:sub":{count,pending}}, "prepared":[XID], "preparedOps":{XID:{adds,acks}},
 * "jobs":[{jobId,destination,messageId,delay,period,repeat,cron,nextTime,start}], "cleanupLines":[..]}.
 */
public final class LayoutWorkload {
    private LayoutWorkload() {}

    static final int MAX_LEN = 16384;
    static final int SCHED_MAX_LEN = MAX_LEN; // one journalMaxFileLength for the whole layout, as holders --max-file-length gives

    public static void main(String[] args) throws Exception {
        if (args.length >= 2 && args[0].equals("run")) {
            File out = new File(args[1]);
            long seed = 1;
            int ops = 30;
            String kind = "mkahadb";
            for (int i = 2; i < args.length; i++) {
                switch (args[i]) {
                    case "--seed": seed = Long.parseLong(args[++i]); break;
                    case "--ops": ops = Integer.parseInt(args[++i]); break;
                    case "--kind": kind = args[++i]; break;
                    default: throw new IllegalArgumentException(args[i]);
                }
            }
            new Run(out, seed, kind, ops).run();
        } else if (args.length >= 3 && args[0].equals("view")) {
            String kind = "mkahadb", mode = "filtered";
            File log = null;
            for (int i = 3; i < args.length; i++) {
                switch (args[i]) {
                    case "--kind": kind = args[++i]; break;
                    case "--mode": mode = args[++i]; break;
                    case "--log": log = new File(args[++i]); break;
                    default: throw new IllegalArgumentException(args[i]);
                }
            }
            Logs.setup(log, false); // MessageDatabase at DEBUG: at TRACE 5.17.2's cleanup can throw (AMQ-9780, see Logs)
            String json = view(new File(args[1]), kind, mode);
            Files.write(new File(args[2]).toPath(), json.getBytes(StandardCharsets.UTF_8));
        } else {
            System.err.println("usage: LayoutWorkload run OUTDIR --seed N --kind mkahadb|scheduler [--ops K] | view DATA_DIR OUT.json --kind K --mode M [--log FILE]");
            System.exit(2);
        }
        System.exit(0);
    }

    /** The seed's adapter knobs (generation only; the view turns periodic work off). */
    static final class Knobs {
        long checkpointInterval = 3600_000L, cleanupInterval = 3600_000L, txCleanupInterval = 3600_000L;
        boolean cleanupOnStop = false;
        long schedCheckpoint = 0, schedCleanup = 0;
        boolean schedCleanupOnStop = false;
    }

    static KahaDBPersistenceAdapter kahadb(Knobs k, boolean forView) {
        KahaDBPersistenceAdapter a = new KahaDBPersistenceAdapter();
        a.setJournalMaxFileLength(MAX_LEN);
        a.setPreallocationScope("none");
        if (forView) {
            a.setCheckpointInterval(0);
            a.setCleanupInterval(0);
            a.setCleanupOnStop(true);
        } else {
            a.setCheckpointInterval(k.checkpointInterval);
            a.setCleanupInterval(k.cleanupInterval);
            a.setCleanupOnStop(k.cleanupOnStop);
        }
        return a;
    }

    static BrokerService broker(File data, String kind, boolean perDest, Knobs k, boolean forView) throws Exception {
        BrokerService b = new BrokerService();
        b.setBrokerName("layout");
        b.setUseJmx(false);
        b.setAdvisorySupport(false);
        b.setDataDirectoryFile(data);
        b.setPersistent(true);
        if (kind.equals("mkahadb")) {
            MultiKahaDBPersistenceAdapter m = new MultiKahaDBPersistenceAdapter();
            m.setDirectory(new File(data, "mKahaDB"));
            m.setJournalMaxFileLength(MAX_LEN);
            m.setJournalCleanupInterval(forView ? 200 : k.txCleanupInterval);
            List<FilteredKahaDBPersistenceAdapter> fs = new ArrayList<>();
            for (Object d : new Object[] {new ActiveMQQueue("ORDERS.>"), new ActiveMQTopic("EVENTS.>"), null}) {
                FilteredKahaDBPersistenceAdapter f = new FilteredKahaDBPersistenceAdapter();
                if (d instanceof ActiveMQQueue) f.setQueue(((ActiveMQQueue) d).getPhysicalName());
                if (d instanceof ActiveMQTopic) f.setTopic(((ActiveMQTopic) d).getPhysicalName());
                f.setPerDestination(d == null && perDest);
                KahaDBPersistenceAdapter t = kahadb(k, forView);
                t.setUseLock(false); // the mKahaDB adapter holds mKahaDB/lock (see MultiStore.template)
                f.setPersistenceAdapter(t);
                fs.add(f);
            }
            m.setFilteredPersistenceAdapters(fs);
            b.setPersistenceAdapter(m);
            b.setSchedulerSupport(false);
        } else {
            KahaDBPersistenceAdapter a = kahadb(k, forView);
            a.setDirectory(new File(data, "kahadb"));
            b.setPersistenceAdapter(a);
            if (forView) {
                b.setSchedulerSupport(false); // no job fires; the scheduler store is read standalone
            } else {
                b.setSchedulerSupport(true);
                JobSchedulerStoreImpl js = new JobSchedulerStoreImpl();
                js.setDirectory(new File(data, "scheduler"));
                js.setJournalMaxFileLength(SCHED_MAX_LEN);
                js.setCheckpointInterval(k.schedCheckpoint);
                js.setCleanupInterval(k.schedCleanup);
                js.setCleanupOnStop(k.schedCleanupOnStop);
                b.setJobSchedulerStore(js);
            }
        }
        PolicyEntry pe = new PolicyEntry();
        pe.setExpireMessagesPeriod(0);
        PolicyMap pm = new PolicyMap();
        pm.setDefaultEntry(pe);
        b.setDestinationPolicy(pm);
        return b;
    }

    /** One seeded workload. */
    static final class Run {
        final File out, data;
        final long seed;
        final String kind;
        final int ops;
        final Random rnd;
        final Knobs k = new Knobs();
        boolean perDest;
        String end;
        final List<Object> steps = new ArrayList<>();
        final List<String> errors = new ArrayList<>();
        final List<String> prepared = new ArrayList<>();
        final Map<String, MultiStore.SimpleXid> open = new LinkedHashMap<>(); // left prepared, not resolved yet
        final Map<String, Object> config = new LinkedHashMap<>();
        BrokerService broker;
        Connection conn;
        Session session;
        XAConnection xconn;
        final Map<String, Connection> subConns = new LinkedHashMap<>();
        final List<ActiveMQQueue> queues = new ArrayList<>();
        final List<ActiveMQTopic> topics = new ArrayList<>();
        final List<String[]> subs = new ArrayList<>(); // {topic, clientId, name}
        int xids;

        Run(File out, long seed, String kind, int ops) {
            this.out = out;
            this.data = new File(out, "data");
            this.seed = seed;
            this.kind = kind;
            this.ops = ops;
            this.rnd = new Random(seed * 7919L + (kind.equals("scheduler") ? 1 : 0));
            if (!kind.equals("mkahadb") && !kind.equals("scheduler")) throw new IllegalArgumentException("kind: " + kind);
        }

        void choose() {
            perDest = kind.equals("mkahadb") && rnd.nextBoolean();
            if (rnd.nextInt(100) < 50) {
                k.checkpointInterval = 100 + rnd.nextInt(400);
                k.cleanupInterval = 200 + rnd.nextInt(800);
            }
            k.cleanupOnStop = rnd.nextInt(100) < 25; // mostly off: the restarted broker finds garbage to delete
            k.txCleanupInterval = rnd.nextBoolean() ? 200 + rnd.nextInt(800) : 3600_000L;
            if (rnd.nextInt(100) < 50) {
                k.schedCheckpoint = 200 + rnd.nextInt(800);
                k.schedCleanup = 300 + rnd.nextInt(1200);
            }
            k.schedCleanupOnStop = rnd.nextInt(100) < 25;
            end = rnd.nextInt(100) < 35 ? "kill" : "stop";
            if (kind.equals("mkahadb")) {
                for (String q : new String[] {"ORDERS.A", "ORDERS.B", "PER.A", "PER.B", "OTHER"}) queues.add(new ActiveMQQueue(q));
                topics.add(new ActiveMQTopic("EVENTS.X"));
                topics.add(new ActiveMQTopic("NEWS"));
                subs.add(new String[] {"EVENTS.X", "c1", "s1"});
                subs.add(new String[] {"EVENTS.X", "c2", "s2"});
                subs.add(new String[] {"NEWS", "c3", "s3"});
            } else {
                queues.add(new ActiveMQQueue("Q.A"));
                queues.add(new ActiveMQQueue("Q.B"));
                topics.add(new ActiveMQTopic("T.X"));
                subs.add(new String[] {"T.X", "c1", "s1"});
            }
            config.put("mode", kind.equals("scheduler") ? "kahadb" : perDest ? "perdest" : "filtered");
            config.put("journalMaxFileLength", MAX_LEN);
            config.put("schedulerMaxFileLength", SCHED_MAX_LEN);
            config.put("checkpointInterval", k.checkpointInterval);
            config.put("cleanupInterval", k.cleanupInterval);
            config.put("cleanupOnStop", k.cleanupOnStop);
            config.put("txCleanupInterval", k.txCleanupInterval);
            config.put("schedulerCheckpointInterval", k.schedCheckpoint);
            config.put("schedulerCleanupInterval", k.schedCleanup);
            config.put("schedulerCleanupOnStop", k.schedCleanupOnStop);
            config.put("end", end);
        }

        Map<String, Object> step(String op) {
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("n", steps.size());
            s.put("op", op);
            steps.add(s);
            return s;
        }

        Destination anyDest() {
            int n = queues.size() + topics.size();
            int i = rnd.nextInt(n);
            return i < queues.size() ? queues.get(i) : topics.get(i - queues.size());
        }

        int size() {
            int r = rnd.nextInt(100);
            if (r < 4) return 18000 + rnd.nextInt(6000); // more than a journal file
            if (r < 20) return 2000 + rnd.nextInt(3000);
            return 100 + rnd.nextInt(900);
        }

        List<String> send(Session s, Destination d, int n) throws Exception {
            List<String> ids = new ArrayList<>();
            MessageProducer p = s.createProducer(d);
            p.setDeliveryMode(DeliveryMode.PERSISTENT);
            for (int i = 0; i < n; i++) {
                TextMessage m = s.createTextMessage(MultiStore.body("s" + steps.size(), i, size()));
                m.setIntProperty("idx", i);
                p.send(m);
                ids.add(m.getJMSMessageID());
            }
            p.close();
            return ids;
        }

        static List<String> receive(MessageConsumer c, int n, long wait) throws Exception {
            List<String> ids = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Message m = c.receive(wait);
                if (m == null) break;
                ids.add(m.getJMSMessageID());
            }
            return ids;
        }

        static String name(Destination d) {
            return ((ActiveMQDestination) d).getQualifiedName();
        }

        void connect() throws Exception {
            String url = "vm://layout?create=false&jms.prefetchPolicy.all=1&jms.redeliveryPolicy.maximumRedeliveries=-1";
            ActiveMQConnectionFactory cf = new ActiveMQConnectionFactory(url);
            cf.setUseAsyncSend(false);
            cf.setSendAcksAsync(false);
            conn = cf.createConnection();
            conn.start();
            session = conn.createSession(false, Session.AUTO_ACKNOWLEDGE);
            for (String[] sub : subs) {
                Connection c = cf.createConnection();
                c.setClientID(sub[1]);
                c.start();
                subConns.put(sub[1], c);
            }
            xconn = new ActiveMQXAConnectionFactory(url).createXAConnection();
            xconn.start();
        }

        void run() throws Exception {
            if (data.exists()) throw new IllegalStateException(data + " exists");
            File logs = new File(out, "logs");
            Files.createDirectories(logs.toPath());
            Files.write(new File(logs, ".gitignore").toPath(), "*\n".getBytes(StandardCharsets.UTF_8));
            // MessageDatabase at DEBUG: at TRACE 5.17.2's cleanup can throw (AMQ-9780) and the broker stops itself
            Logs.setup(new File(logs, "run.log"), false);
            choose();
            long t0 = System.currentTimeMillis();
            broker = broker(data, kind, perDest, k, false);
            broker.start();
            broker.waitUntilStarted();
            connect();
            // every durable subscription exists from the start, some get a selector
            for (String[] sub : subs) {
                Session s = subConns.get(sub[1]).createSession(false, Session.AUTO_ACKNOWLEDGE);
                String sel = sub[2].equals("s2") ? "idx < 5" : null;
                s.createDurableSubscriber(new ActiveMQTopic(sub[0]), sub[2], sel, false).close();
                s.close();
            }
            try {
                for (int i = 0; i < ops; i++) {
                    if (kind.equals("mkahadb")) multiOp();
                    else schedulerOp();
                }
                if (end.equals("kill") && rnd.nextBoolean()) {
                    Session ts = conn.createSession(true, Session.SESSION_TRANSACTED);
                    Map<String, Object> s = step("local-open-at-kill");
                    Destination d1 = anyDest(), d2 = anyDest();
                    s.put("destinations", List.of(name(d1), name(d2)));
                    s.put("sent", List.of(send(ts, d1, 1 + rnd.nextInt(3)), send(ts, d2, 1 + rnd.nextInt(3))));
                }
            } catch (Exception e) {
                errors.add(e.toString());
                e.printStackTrace();
            }
            Map<String, Object> doc = new LinkedHashMap<>();
            doc.put("seed", seed);
            doc.put("kind", kind);
            doc.put("ops", ops);
            doc.put("config", config);
            doc.put("activemqVersion", org.apache.activemq.ActiveMQConnectionMetaData.PROVIDER_VERSION);
            doc.put("prepared", new ArrayList<>(open.keySet()));
            doc.put("errors", errors);
            doc.put("steps", steps);
            doc.put("seconds", (System.currentTimeMillis() - t0) / 1000.0);
            byte[] raw = Json.write(doc).getBytes(StandardCharsets.UTF_8);
            Files.write(new File(out, "workload.json.tmp").toPath(), raw);
            Files.move(new File(out, "workload.json.tmp").toPath(), new File(out, "workload.json").toPath());
            Logs.flush();
            if (end.equals("kill")) {
                Runtime.getRuntime().halt(0);
            }
            try {
                conn.close();
                xconn.close();
                for (Connection c : subConns.values()) c.close();
            } catch (Exception e) {
                // the broker stops anyway
            }
            broker.stop();
            broker.waitUntilStopped();
        }

        void multiOp() throws Exception {
            int r = rnd.nextInt(100);
            if (r < 26) {
                Destination d = anyDest();
                int n = 1 + rnd.nextInt(12);
                Map<String, Object> s = step("send");
                s.put("destination", name(d));
                s.put("ids", send(session, d, n));
            } else if (r < 44) {
                ActiveMQQueue q = queues.get(rnd.nextInt(queues.size()));
                int n = 1 + rnd.nextInt(15);
                Map<String, Object> s = step("consume");
                s.put("destination", name(q));
                MessageConsumer c = session.createConsumer(q);
                s.put("received", receive(c, n, 200));
                c.close();
            } else if (r < 54) {
                String[] sub = subs.get(rnd.nextInt(subs.size()));
                int n = 1 + rnd.nextInt(15);
                Map<String, Object> s = step("consume-sub");
                s.put("subscription", "topic://" + sub[0] + "|" + sub[1] + ":" + sub[2]);
                Session ss = subConns.get(sub[1]).createSession(false, Session.AUTO_ACKNOWLEDGE);
                String sel = sub[2].equals("s2") ? "idx < 5" : null;
                TopicSubscriber ts = ss.createDurableSubscriber(new ActiveMQTopic(sub[0]), sub[2], sel, false);
                s.put("received", receive(ts, n, 200));
                ts.close();
                ss.close();
            } else if (r < 65) {
                Session ts = conn.createSession(true, Session.SESSION_TRANSACTED);
                Map<String, Object> s = step("local-tx");
                List<Object> sent = new ArrayList<>();
                int nd = 2 + rnd.nextInt(2);
                for (int i = 0; i < nd; i++) {
                    Destination d = anyDest();
                    sent.add(Map.of("destination", name(d), "ids", send(ts, d, 1 + rnd.nextInt(4))));
                }
                s.put("sent", sent);
                if (rnd.nextBoolean()) {
                    ActiveMQQueue q = queues.get(rnd.nextInt(queues.size()));
                    MessageConsumer c = ts.createConsumer(q);
                    s.put("receivedFrom", name(q));
                    s.put("received", receive(c, 1 + rnd.nextInt(3), 200));
                    c.close();
                }
                boolean commit = rnd.nextInt(100) < 75;
                if (commit) ts.commit();
                else ts.rollback();
                s.put("outcome", commit ? "commit" : "rollback");
                ts.close();
            } else if (r < 80) {
                xa();
            } else if (r < 87 && !open.isEmpty()) {
                String x = new ArrayList<>(open.keySet()).get(rnd.nextInt(open.size()));
                MultiStore.SimpleXid xid = open.remove(x);
                XASession xs = xconn.createXASession();
                boolean commit = rnd.nextBoolean();
                if (commit) xs.getXAResource().commit(xid, false);
                else xs.getXAResource().rollback(xid);
                xs.close();
                Map<String, Object> s = step("xa-resolve");
                s.put("xid", x);
                s.put("outcome", commit ? "commit" : "rollback");
            } else if (r < 94) {
                step("checkpoint");
                broker.getPersistenceAdapter().checkpoint(true);
            } else {
                int ms = 100 + rnd.nextInt(500);
                step("sleep").put("ms", ms);
                Thread.sleep(ms);
            }
        }

        void xa() throws Exception {
            XASession xs = xconn.createXASession();
            XAResource xr = xs.getXAResource();
            Session ss = xs.getSession();
            MultiStore.SimpleXid xid = new MultiStore.SimpleXid("seed" + seed + "-x" + (xids++), "bq");
            String x = new XATransactionId(xid).toString();
            Map<String, Object> s = step("xa");
            s.put("xid", x);
            xr.start(xid, XAResource.TMNOFLAGS);
            List<Object> sent = new ArrayList<>();
            int nd = 1 + rnd.nextInt(3);
            for (int i = 0; i < nd; i++) {
                Destination d = anyDest();
                sent.add(Map.of("destination", name(d), "ids", send(ss, d, 1 + rnd.nextInt(3))));
            }
            s.put("sent", sent);
            if (rnd.nextBoolean()) {
                ActiveMQQueue q = queues.get(rnd.nextInt(queues.size()));
                MessageConsumer c = ss.createConsumer(q);
                s.put("receivedFrom", name(q));
                s.put("received", receive(c, 1 + rnd.nextInt(2), 200));
                c.close();
            }
            xr.end(xid, XAResource.TMSUCCESS);
            int r = rnd.nextInt(100);
            String outcome;
            if (r < 30) {
                xr.prepare(xid);
                xr.commit(xid, false);
                outcome = "2pc-commit";
            } else if (r < 45) {
                xr.commit(xid, true);
                outcome = "1pc-commit";
            } else if (r < 58) {
                xr.prepare(xid);
                xr.rollback(xid);
                outcome = "prepare-rollback";
            } else if (r < 66) {
                xr.rollback(xid);
                outcome = "rollback";
            } else {
                xr.prepare(xid);
                open.put(x, xid);
                outcome = "prepared";
            }
            s.put("outcome", outcome);
            xs.close();
        }

        JobScheduler jobs() throws Exception {
            return broker.getJobSchedulerStore().getJobScheduler("JMS");
        }

        void schedule(String op, int n, long delay, long period, int repeat, String cron) throws Exception {
            Map<String, Object> s = step(op);
            ActiveMQQueue q = queues.get(rnd.nextInt(queues.size()));
            s.put("destination", name(q));
            s.put("delay", delay);
            s.put("period", period);
            s.put("repeat", repeat);
            s.put("cron", cron);
            MessageProducer p = session.createProducer(q);
            p.setDeliveryMode(DeliveryMode.PERSISTENT);
            List<String> ids = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                TextMessage m = session.createTextMessage(MultiStore.body("job" + steps.size(), i, size()));
                if (delay > 0) m.setLongProperty(ScheduledMessage.AMQ_SCHEDULED_DELAY, delay);
                if (period > 0) m.setLongProperty(ScheduledMessage.AMQ_SCHEDULED_PERIOD, period);
                if (repeat != 0) m.setIntProperty(ScheduledMessage.AMQ_SCHEDULED_REPEAT, repeat);
                if (cron != null) m.setStringProperty(ScheduledMessage.AMQ_SCHEDULED_CRON, cron);
                p.send(m);
                ids.add(m.getJMSMessageID());
            }
            p.close();
            s.put("ids", ids);
        }

        void schedulerOp() throws Exception {
            int r = rnd.nextInt(100);
            if (r < 10) {
                ActiveMQQueue q = queues.get(rnd.nextInt(queues.size()));
                Map<String, Object> s = step("send");
                s.put("destination", name(q));
                s.put("ids", send(session, q, 1 + rnd.nextInt(8)));
            } else if (r < 18) {
                ActiveMQQueue q = queues.get(rnd.nextInt(queues.size()));
                Map<String, Object> s = step("consume");
                s.put("destination", name(q));
                MessageConsumer c = session.createConsumer(q);
                s.put("received", receive(c, 1 + rnd.nextInt(10), 200));
                c.close();
            } else if (r < 36) {
                schedule("delay-fires", 1 + rnd.nextInt(6), 100 + rnd.nextInt(1400), 0, 0, null);
            } else if (r < 46) {
                schedule("delay-stays", 1 + rnd.nextInt(3), 3600_000L + rnd.nextInt(3600_000), 0, 0, null);
            } else if (r < 56) {
                schedule("repeat-ends", 1 + rnd.nextInt(2), rnd.nextInt(300), 100 + rnd.nextInt(300), 1 + rnd.nextInt(5), null);
            } else if (r < 61) {
                schedule("repeat-stays", 1, 3600_000L, 3600_000L, 10 + rnd.nextInt(10), null);
            } else if (r < 66) {
                schedule("repeat-running", 1, rnd.nextInt(200), 150 + rnd.nextInt(300), 1000, null);
            } else if (r < 71) {
                schedule("cron", 1, 0, 0, 0, rnd.nextBoolean() ? "0 0 1 1 *" : "30 4 * * 0");
            } else if (r < 80) {
                List<Job> all = jobs().getAllJobs();
                Map<String, Object> s = step("remove-job");
                if (!all.isEmpty()) {
                    List<String> ids = new ArrayList<>();
                    for (Job j : all) ids.add(j.getJobId());
                    java.util.Collections.sort(ids);
                    String id = ids.get(rnd.nextInt(ids.size()));
                    jobs().remove(id);
                    s.put("jobId", id);
                }
            } else if (r < 84) {
                long now = System.currentTimeMillis();
                long from = now + 1800_000L, to = now + 5400_000L;
                Map<String, Object> s = step("remove-range");
                s.put("from", from);
                s.put("to", to);
                jobs().removeAllJobs(from, to);
            } else if (r < 90) {
                Map<String, Object> s = step("consume-sub");
                String[] sub = subs.get(0);
                Session ss = subConns.get(sub[1]).createSession(false, Session.AUTO_ACKNOWLEDGE);
                TopicSubscriber ts = ss.createDurableSubscriber(new ActiveMQTopic(sub[0]), sub[2], null, false);
                s.put("received", receive(ts, 1 + rnd.nextInt(5), 200));
                ts.close();
                ss.close();
                Map<String, Object> t = step("send");
                t.put("destination", "topic://" + sub[0]);
                t.put("ids", send(session, topics.get(0), 1 + rnd.nextInt(4)));
            } else {
                int ms = 200 + rnd.nextInt(1300);
                step("sleep").put("ms", ms);
                Thread.sleep(ms);
            }
        }
    }

    // ---- the oracle -----------------------------------------------------------------------------------------

    static String view(File data, String kind, String mode) throws Exception {
        Map<String, Object> before = MultiStore.storeFiles(data);
        Knobs k = new Knobs();
        BrokerService b = broker(data, kind, mode.equals("perdest"), k, true);
        Map<String, Object> queues = new TreeMap<>();
        Map<String, Object> subs = new TreeMap<>();
        List<String> prepared = new ArrayList<>();
        Map<String, Object> preparedOps = new TreeMap<>();
        b.start();
        b.waitUntilStarted();
        try {
            for (org.apache.activemq.command.TransactionId t : b.getBroker().getPreparedTransactions(null)) {
                prepared.add(t.toString());
            }
            java.util.Collections.sort(prepared);
            PersistenceAdapter a = b.getPersistenceAdapter();
            a.createTransactionStore().recover(new TransactionRecoveryListener() {
                @Override
                public void recover(XATransactionId xid, org.apache.activemq.command.Message[] added, MessageAck[] acks) {
                    @SuppressWarnings("unchecked")
                    Map<String, Object> t = (Map<String, Object>) preparedOps.computeIfAbsent(xid.toString(), x -> {
                        Map<String, Object> m = new LinkedHashMap<>();
                        m.put("adds", new TreeSet<String>());
                        m.put("acks", new TreeSet<String>());
                        return m;
                    });
                    for (org.apache.activemq.command.Message m : added) ((TreeSet<String>) t.get("adds")).add(m.getMessageId().toString());
                    for (MessageAck ack : acks) {
                        if (ack.getLastMessageId() != null) ((TreeSet<String>) t.get("acks")).add(ack.getLastMessageId().toString());
                    }
                }
            });
            List<ActiveMQDestination> all = new ArrayList<>(a.getDestinations());
            all.sort((x, y) -> x.getQualifiedName().compareTo(y.getQualifiedName()));
            for (ActiveMQDestination d : all) {
                if (d.isQueue()) {
                    MessageStore ms = a.createQueueMessageStore((ActiveMQQueue) d);
                    ms.start();
                    Inspect.Collector c = new Inspect.Collector();
                    ms.recover(c);
                    Map<String, Object> q = new LinkedHashMap<>();
                    q.put("count", ms.getMessageCount());
                    q.put("pending", c.ids);
                    queues.put(d.getPhysicalName(), q);
                } else if (d.isTopic()) {
                    TopicMessageStore ts = a.createTopicMessageStore((ActiveMQTopic) d);
                    ts.start();
                    for (SubscriptionInfo si : ts.getAllSubscriptions()) {
                        Inspect.Collector c = new Inspect.Collector();
                        int count = ts.getMessageCount(si.getClientId(), si.getSubscriptionName());
                        ts.recoverSubscription(si.getClientId(), si.getSubscriptionName(), c);
                        Map<String, Object> s = new LinkedHashMap<>();
                        s.put("count", count);
                        s.put("pending", c.ids);
                        subs.put(d.getQualifiedName() + "|" + si.getClientId() + ":" + si.getSubscriptionName(), s);
                    }
                }
            }
            Thread.sleep(1500); // the transaction store's periodic cleanup
        } finally {
            b.stop();
            b.waitUntilStopped();
        }
        List<Object> jobs = new ArrayList<>();
        File sched = new File(data, "scheduler");
        if (new File(sched, "scheduleDB.data").exists() || !Inspect.fileIds(sched).isEmpty()) {
            JobSchedulerStoreImpl js = new JobSchedulerStoreImpl();
            js.setDirectory(sched);
            js.setJournalMaxFileLength(SCHED_MAX_LEN);
            js.setCheckpointInterval(0);
            js.setCleanupInterval(0);
            js.setCleanupOnStop(true);
            js.start();
            OpenWireFormat wf = new OpenWireFormat();
            for (Job j : js.getJobScheduler("JMS").getAllJobs()) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("jobId", j.getJobId());
                m.put("start", j.getStartTime());
                m.put("delay", j.getDelay());
                m.put("period", j.getPeriod());
                m.put("repeat", j.getRepeat());
                m.put("cron", j.getCronEntry());
                m.put("nextTime", j.getNextExecutionTime());
                org.apache.activemq.command.Message msg = (org.apache.activemq.command.Message) wf.unmarshal(new ByteSequence(j.getPayload()));
                m.put("messageId", msg.getMessageId().toString());
                m.put("destination", msg.getDestination().getQualifiedName());
                jobs.add(m);
            }
            js.stop();
        }
        Logs.flush();
        Map<String, Object> after = MultiStore.storeFiles(data);
        Map<String, Object> stores = new TreeMap<>();
        for (String rel : before.keySet()) {
            @SuppressWarnings("unchecked") List<Integer> bf = (List<Integer>) before.get(rel);
            @SuppressWarnings("unchecked") List<Integer> af = (List<Integer>) after.getOrDefault(rel, new ArrayList<Integer>());
            List<Integer> del = new ArrayList<>(bf);
            del.removeAll(af);
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("filesBefore", bf);
            e.put("filesAfter", af);
            e.put("deleted", del);
            stores.put(rel, e);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("kind", kind);
        out.put("mode", mode);
        out.put("stores", stores);
        out.put("queues", queues);
        out.put("subscriptions", subs);
        out.put("prepared", prepared);
        Map<String, Object> ops = new TreeMap<>();
        for (Map.Entry<String, Object> e : preparedOps.entrySet()) {
            @SuppressWarnings("unchecked") Map<String, Object> t = (Map<String, Object>) e.getValue();
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("adds", new ArrayList<>((TreeSet<?>) t.get("adds")));
            o.put("acks", new ArrayList<>((TreeSet<?>) t.get("acks")));
            ops.put(e.getKey(), o);
        }
        out.put("preparedOps", ops);
        out.put("jobs", jobs);
        out.put("cleanupLines", Logs.cleanupLines());
        return Json.write(out);
    }
}
