import java.io.File;
import java.io.FileWriter;
import java.io.Writer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;

import javax.jms.Connection;
import javax.jms.MessageConsumer;
import javax.jms.MessageProducer;
import javax.jms.Session;
import javax.jms.TextMessage;

import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.ScheduledMessage;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;
import org.apache.activemq.store.kahadb.scheduler.JobSchedulerStoreImpl;

/**
 * SchedulerGen OUTDIR SCENARIO: a real broker with schedulerSupport="true"
 * and a JobSchedulerStoreImpl of its own (journalMaxFileLength 8 KiB,
 * periodic checkpoint and cleanup off, no cleanup on stop) writes
 * OUTDIR/store (the job scheduler store: db-N.log, scheduleDB.data, ...);
 * the broker's KahaDB store goes to OUTDIR/logs/broker-data. Scenarios:
 *
 *   jobs  delayed jobs (1 h, pending), delayed jobs that fire and are
 *         removed (300 ms), repeating jobs that fire every 200 ms 4 more
 *         times and are removed, cron jobs (pending: next run on 1 January),
 *         then more delayed jobs that fire, so early files hold adds of
 *         pending jobs, middle files only garbage and the last files the
 *         removes. Stops cleanly without cleanup: the next start's cleanup
 *         deletes files.
 *
 * OUTDIR/expected.json records what was sent and the files left.
 */
public class SchedulerGen {
    static final int MAX_LEN = 8192;

    public static void main(String[] args) throws Exception {
        if (args.length != 2 || !(args[1].equals("jobs") || args[1].equals("churn") || args[1].equals("aged") || args[1].equals("crash"))) {
            System.err.println("usage: SchedulerGen OUTDIR jobs|churn|aged|crash");
            System.exit(2);
        }
        File out = new File(args[0]);
        File store = new File(out, "store");
        File logs = new File(out, "logs");
        if (store.exists()) {
            throw new IllegalStateException(store + " exists");
        }
        logs.mkdirs();
        try (Writer w = new FileWriter(new File(logs, ".gitignore"))) {
            w.write("*\n!.gitignore\n");
        }
        Logs.setup(new File(logs, "generate.log"));
        List<String> steps = new ArrayList<>();
        String pad = "x".repeat(400);
        int fired = 0;

        if (args[1].equals("aged")) {
            // first run: jobs, then a clean stop WITH the cleanup, which
            // deletes files (some holding reschedules of jobs that go on)
            BrokerService b1 = startBroker(store, logs, true, 0);
            Connection c1 = new ActiveMQConnectionFactory("vm://sched?create=false").createConnection();
            c1.start();
            Session s1 = c1.createSession(false, Session.AUTO_ACKNOWLEDGE);
            MessageProducer p1 = s1.createProducer(null);
            for (int i = 0; i < 3; i++) {
                send(s1, p1, "Q.AGED.TICK", "aged-tick-" + i, 50L, 150L, 1000, null);
            }
            send(s1, p1, "Q.AGED.LATER", "aged-later " + pad, 3 * 3600_000L, 0, 0, null);
            for (int i = 0; i < 45; i++) {
                send(s1, p1, "Q.AGED.SOON", "aged-soon-" + i + " " + pad, 1500L, 0, 0, null);
            }
            waitFor(s1, "Q.AGED.SOON", 45);
            Thread.sleep(600);
            fired += 45;
            steps.add("first run: Q.AGED.TICK: 3 jobs period 150 ms, repeat 1000 (repeating through both runs), Q.AGED.LATER: 1 job delayed 3 h, 45 Q.AGED.SOON jobs delayed 1.5 s (fire, removed)");
            c1.close();
            b1.stop();
            b1.waitUntilStopped();
            steps.add("clean stop with cleanup (cleanupOnStop true): files deleted; restart");
        }
        boolean crash = args[1].equals("crash");
        BrokerService b = startBroker(store, logs, false, crash ? 300 : 0);
        ActiveMQConnectionFactory cf = new ActiveMQConnectionFactory("vm://sched?create=false");
        Connection c = cf.createConnection();
        c.start();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageProducer p = s.createProducer(null);

        if (crash) {
            // jobs repeating, fired and removed while the store checkpoints
            // its index every 300 ms (no cleanup), then Runtime.halt: the
            // index on disk is behind the journal
            for (int i = 0; i < 3; i++) {
                send(s, p, "Q.CRASH.TICK", "crash-tick-" + i, 50L, 100L, 1000, null);
            }
            send(s, p, "Q.CRASH.LATER", "crash-later " + pad, 3600_000L, 0, 0, null);
            for (int round = 0; round < 2; round++) {
                for (int i = 0; i < 30; i++) {
                    send(s, p, "Q.CRASH.SOON", "crash-soon-" + round + "-" + i + " " + pad, 700L, 0, 0, null);
                }
                waitFor(s, "Q.CRASH.SOON", 30);
            }
            fired += 60;
            send(s, p, "Q.CRASH.LATER", "crash-later-2 " + pad, 7200_000L, 0, 0, null);
            for (int i = 0; i < 10; i++) {
                send(s, p, "Q.CRASH.SOON", "crash-soon-tail-" + i + " " + pad, 400L, 0, 0, null);
            }
            waitFor(s, "Q.CRASH.SOON", 10);
            fired += 10;
            Thread.sleep(450);
            steps.add("index checkpoints every 300 ms (checkpointInterval 300, no cleanup); Q.CRASH.TICK: 3 jobs period 100 ms, repeat 1000; Q.CRASH.LATER: jobs delayed 1 h, 2 h; 2 rounds of 30 and 10 Q.CRASH.SOON jobs (fire, removed); then Runtime.halt (no stop, no checkpoint)");
        } else if (args[1].equals("aged")) {
            // second run: the ticks go on; a block of jobs whose adds fill
            // files of their own (free at the next cleanup), fired
            send(s, p, "Q.AGED.LATER", "aged-later-2 " + pad, 4 * 3600_000L, 0, 0, null);
            for (int i = 0; i < 45; i++) {
                send(s, p, "Q.AGED.SOON", "aged-soon-2-" + i + " " + pad, 1500L, 0, 0, null);
            }
            waitFor(s, "Q.AGED.SOON", 45);
            fired += 45;
            send(s, p, "Q.CRON", "cron " + pad, 0, 0, 0, "0 12 * * *");
            steps.add("second run (no cleanup on stop): the ticks go on, Q.AGED.LATER: 1 job delayed 4 h, 45 Q.AGED.SOON jobs delayed 1.5 s (fire, removed), Q.CRON: 1 cron job (0 12 * * *)");
        } else if (args[1].equals("churn")) {
            fired = churn(s, p, pad, steps);
        } else {
        // 1. pending delayed jobs (1 h): the first files
        String firstLater = null;
        for (int i = 0; i < 12; i++) {
            String id = send(s, p, "Q.LATER", "later-" + i + " " + pad, 3600_000L, 0, 0, null);
            if (firstLater == null) firstLater = id;
        }
        steps.add("Q.LATER: 12 jobs delayed 1 h (pending)");
        // 2. short delayed jobs that fire and are removed
        for (int i = 0; i < 40; i++) {
            send(s, p, "Q.SOON", "soon-" + i + " " + pad, 300L, 0, 0, null);
        }
        fired += 40;
        steps.add("Q.SOON: 40 jobs delayed 300 ms (fire, removed)");
        // 3. repeating jobs: fire 5 times (repeat 4), 200 ms apart, then removed
        for (int i = 0; i < 3; i++) {
            send(s, p, "Q.REPEAT", "repeat-" + i + " " + pad, 100L, 200L, 4, null);
        }
        fired += 15;
        steps.add("Q.REPEAT: 3 jobs delay 100 ms, period 200 ms, repeat 4 (5 fires each, rescheduled, removed)");
        // 4. cron jobs: next run on 1 January (pending)
        send(s, p, "Q.CRON", "cron-0 " + pad, 0, 0, 0, "0 0 1 1 *");
        send(s, p, "Q.CRON", "cron-1 " + pad, 0, 0, 0, "30 12 1 1 *");
        steps.add("Q.CRON: 2 cron jobs (0 0 1 1 *, 30 12 1 1 *), pending");
        waitFor(s, "Q.SOON", 40);
        waitFor(s, "Q.REPEAT", 15);
        // 5. more short jobs: garbage in the middle and removes at the end
        for (int i = 0; i < 30; i++) {
            send(s, p, "Q.SOON2", "soon2-" + i + " " + pad, 200L, 0, 0, null);
        }
        fired += 30;
        waitFor(s, "Q.SOON2", 30);
        steps.add("Q.SOON2: 30 jobs delayed 200 ms (fire, removed)");
        // 6. jobs removed through the scheduler's management topic: one
        // pending job by id (KAHA_REMOVE_SCHEDULED_JOB_COMMAND) and the
        // jobs due 4..6 h from now (KAHA_REMOVE_SCHEDULED_JOBS_COMMAND)
        long now = System.currentTimeMillis();
        for (int i = 0; i < 5; i++) {
            send(s, p, "Q.DOOMED", "doomed-" + i + " " + pad, 5 * 3600_000L, 0, 0, null);
        }
        javax.jms.Topic mgmt = s.createTopic(ScheduledMessage.AMQ_SCHEDULER_MANAGEMENT_DESTINATION);
        TextMessage rm = s.createTextMessage();
        rm.setStringProperty(ScheduledMessage.AMQ_SCHEDULER_ACTION, ScheduledMessage.AMQ_SCHEDULER_ACTION_REMOVE);
        rm.setStringProperty(ScheduledMessage.AMQ_SCHEDULED_ID, firstLater);
        p.send(mgmt, rm);
        TextMessage ra = s.createTextMessage();
        ra.setStringProperty(ScheduledMessage.AMQ_SCHEDULER_ACTION, ScheduledMessage.AMQ_SCHEDULER_ACTION_REMOVEALL);
        ra.setStringProperty(ScheduledMessage.AMQ_SCHEDULER_ACTION_START_TIME, Long.toString(now + 4 * 3600_000L));
        ra.setStringProperty(ScheduledMessage.AMQ_SCHEDULER_ACTION_END_TIME, Long.toString(now + 6 * 3600_000L));
        p.send(mgmt, ra);
        steps.add("Q.DOOMED: 5 jobs delayed 5 h, removed by a REMOVEALL of the jobs due 4..6 h from now; the first Q.LATER job removed by id");
        Thread.sleep(300);
        // 7. a pending job at the end
        send(s, p, "Q.LATER", "later-tail " + pad, 7200_000L, 0, 0, null);
        steps.add("Q.LATER: 1 job delayed 2 h (pending)");
        }
        if (!crash) {
            Thread.sleep(500);
            c.close();
            b.stop();
            b.waitUntilStopped();
        }

        TreeSet<String> files = new TreeSet<>(Arrays.asList(store.list()));
        try (Writer w = new FileWriter(new File(out, "expected.json"))) {
            w.write("{\n  \"scenario\": \"scheduler-" + args[1] + "\",\n");
            w.write("  \"description\": " + Json.quote("Job scheduler store (JobSchedulerStoreImpl, journalMaxFileLength "
                + MAX_LEN + ", checkpoint/cleanup intervals 0, cleanupOnStop false) of a broker with schedulerSupport: "
                + String.join("; ", steps) + (crash ? "." : "; clean stop without cleanup.")) + ",\n");
            w.write("  \"activemqVersion\": " + Json.quote(BrokerService.class.getPackage().getImplementationVersion()) + ",\n");
            w.write("  \"journalMaxFileLength\": " + MAX_LEN + ",\n");
            w.write("  \"fired\": " + fired + ",\n");
            w.write("  \"files\": [");
            boolean first = true;
            for (String f : files) {
                w.write((first ? "" : ", ") + Json.quote(f));
                first = false;
            }
            w.write("]\n}\n");
        }
        if (crash) {
            Runtime.getRuntime().halt(0);
        }
        System.exit(0);
    }

    static BrokerService startBroker(File store, File logs, boolean cleanupOnStop, long checkpointInterval) throws Exception {
        JobSchedulerStoreImpl js = new JobSchedulerStoreImpl();
        js.setDirectory(store);
        js.setJournalMaxFileLength(MAX_LEN);
        js.setCheckpointInterval(checkpointInterval);
        js.setCleanupInterval(0);
        js.setCleanupOnStop(cleanupOnStop);

        BrokerService b = new BrokerService();
        b.setBrokerName("sched");
        b.setUseJmx(false);
        b.setAdvisorySupport(false);
        b.setSchedulerSupport(true);
        b.setPersistent(true);
        b.setUseShutdownHook(false);
        b.setDataDirectoryFile(new File(logs, "broker-data"));
        KahaDBPersistenceAdapter a = new KahaDBPersistenceAdapter();
        a.setDirectory(new File(logs, "broker-data/kahadb"));
        b.setPersistenceAdapter(a);
        b.setJobSchedulerStore(js);
        b.start();
        b.waitUntilStarted();
        return b;
    }

    // churn: jobs whose last reschedule moves from file to file while
    // others are added, fire and are removed; stopped while some still
    // repeat. Returns the fires waited for.
    static int churn(Session s, MessageProducer p, String pad, List<String> steps) throws Exception {
        for (int i = 0; i < 4; i++) {
            send(s, p, "Q.TICK", "tick-" + i + " " + pad.substring(0, 100), 50L, 120L, 1000, null);
        }
        steps.add("Q.TICK: 4 jobs delay 50 ms, period 120 ms, repeat 1000 (still repeating at the stop)");
        for (int i = 0; i < 3; i++) {
            send(s, p, "Q.TICK.SHORT", "short-" + i, 50L, 100L, 6, null);
        }
        steps.add("Q.TICK.SHORT: 3 jobs delay 50 ms, period 100 ms, repeat 6 (7 fires, removed)");
        for (int round = 0; round < 8; round++) {
            for (int i = 0; i < 6; i++) {
                send(s, p, "Q.SOON", "soon-" + round + "-" + i + " " + pad, 100L + 50L * i, 0, 0, null);
            }
            if (round == 0 || round == 4) {
                send(s, p, "Q.LATER", "later-" + round + " " + pad, 3600_000L * (round + 1), 0, 0, null);
            }
            Thread.sleep(400);
        }
        steps.add("8 rounds of 6 Q.SOON jobs delayed 100-350 ms (fire, removed), 400 ms apart; in rounds 0 and 4 a Q.LATER job delayed 1 h, 5 h (pending)");
        send(s, p, "Q.CRON", "cron " + pad, 0, 0, 0, "15 3 * * 1");
        steps.add("Q.CRON: 1 cron job (15 3 * * 1), pending");
        waitFor(s, "Q.SOON", 48);
        waitFor(s, "Q.TICK.SHORT", 21);
        Thread.sleep(800);
        return 69;
    }

    // send sends a scheduled message and returns its id (the job's id).
    static String send(Session s, MessageProducer p, String q, String text, long delay, long period, int repeat, String cron) throws Exception {
        TextMessage m = s.createTextMessage(text);
        if (delay > 0) m.setLongProperty(ScheduledMessage.AMQ_SCHEDULED_DELAY, delay);
        if (period > 0) m.setLongProperty(ScheduledMessage.AMQ_SCHEDULED_PERIOD, period);
        if (repeat > 0) m.setIntProperty(ScheduledMessage.AMQ_SCHEDULED_REPEAT, repeat);
        if (cron != null) m.setStringProperty(ScheduledMessage.AMQ_SCHEDULED_CRON, cron);
        p.send(s.createQueue(q), m);
        return m.getJMSMessageID();
    }

    // waitFor consumes n messages of q (the fired jobs), failing after 30 s.
    static void waitFor(Session s, String q, int n) throws Exception {
        MessageConsumer mc = s.createConsumer(s.createQueue(q));
        for (int i = 0; i < n; i++) {
            if (mc.receive(30_000) == null) {
                throw new IllegalStateException(q + ": " + i + " of " + n + " fired jobs received");
            }
        }
        mc.close();
    }
}
