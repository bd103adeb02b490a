import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

import javax.jms.Connection;
import javax.jms.DeliveryMode;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.MessageProducer;
import javax.jms.Queue;
import javax.jms.Session;
import javax.jms.TextMessage;
import javax.jms.Topic;

import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.broker.region.policy.PolicyEntry;
import org.apache.activemq.broker.region.policy.PolicyMap;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;

/**
 * BigStore STORE_DIR SCALE [SEED [MAX_FILE_LENGTH]]: a big-pending store written by a real
 * broker outright, message by message (the bench's big-pending store has a
 * generated journal and only its db.data from a broker). At SCALE 1:
 * 500 k messages sent to ActiveMQ.DLQ, 100 k to the slow queue REPORTS, of
 * which a consumer takes the first 10 k, 250 k published to the topic
 * EVENTS while its durable subscription (client "reporting", name
 * "archive") is offline, and 200 k sent to WORK and consumed as they come
 * — all interleaved, text bodies of 1.5 to 3.5 KB that name an order
 * number ("order #N"). Journal files of 32 MiB (or MAX_FILE_LENGTH bytes); the broker is stopped
 * cleanly, so db.data is the index a restarted broker adopts. Prints what
 * it sent (one JSON line: the counts, the body bytes, the id of the
 * first message sent to the DLQ) and how long it took. Takes a few minutes at SCALE 1 (about
 * 2.5 GB of journal).
 */
public class BigStore {
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: BigStore STORE_DIR SCALE [SEED [MAX_FILE_LENGTH]]");
            System.exit(2);
        }
        File store = new File(args[0]);
        double scale = Double.parseDouble(args[1]);
        long seed = args.length > 2 ? Long.parseLong(args[2]) : 1;
        int maxFileLength = args.length > 3 ? Integer.parseInt(args[3]) : 32 << 20;
        long t0 = System.nanoTime();

        BrokerService b = new BrokerService();
        b.setBrokerName("bigstore");
        b.setUseJmx(false);
        b.setAdvisorySupport(false);
        b.setSchedulerSupport(false);
        b.setPersistent(true);
        b.setUseShutdownHook(false);
        b.setDataDirectoryFile(new File(store.getAbsoluteFile().getParentFile(), "broker-data"));
        KahaDBPersistenceAdapter a = new KahaDBPersistenceAdapter();
        a.setDirectory(store);
        a.setJournalMaxFileLength(maxFileLength);
        a.setEnableJournalDiskSyncs(false);
        b.setPersistenceAdapter(a);
        b.getSystemUsage().getStoreUsage().setLimit(64L << 30);
        b.getSystemUsage().getTempUsage().setLimit(8L << 30);
        List<PolicyEntry> es = new ArrayList<>();
        for (boolean topic : new boolean[] {false, true}) {
            PolicyEntry e = new PolicyEntry();
            if (topic) e.setTopic(">"); else e.setQueue(">");
            e.setProducerFlowControl(false);
            e.setExpireMessagesPeriod(0);
            es.add(e);
        }
        PolicyMap pm = new PolicyMap();
        pm.setPolicyEntries(es);
        b.setDestinationPolicy(pm);
        b.start();
        if (!b.waitUntilStarted(60_000)) throw new IllegalStateException("the broker did not start");

        ActiveMQConnectionFactory f = new ActiveMQConnectionFactory("vm://bigstore?create=false");
        f.setWatchTopicAdvisories(false);
        f.setUseAsyncSend(true);
        f.setCopyMessageOnSend(false);

        // the durable subscription, then offline
        Connection sc = f.createConnection();
        sc.setClientID("reporting");
        sc.start();
        Session ss = sc.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Topic events = ss.createTopic("EVENTS");
        ss.createDurableSubscriber(events, "archive").close();
        sc.close();

        Connection c = f.createConnection();
        c.start();
        Session ps = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue dlq = ps.createQueue("ActiveMQ.DLQ"), reports = ps.createQueue("REPORTS"), work = ps.createQueue("WORK");
        MessageProducer p = ps.createProducer(null);
        p.setDeliveryMode(DeliveryMode.PERSISTENT);

        long nDLQ = (long) (500_000 * scale), nReports = (long) (100_000 * scale), nEvents = (long) (250_000 * scale),
                nWork = (long) (200_000 * scale), reportsTaken = (long) (10_000 * scale);
        AtomicLong workTaken = new AtomicLong();
        Session ws = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageConsumer wc = ws.createConsumer(work);
        wc.setMessageListener(m -> workTaken.incrementAndGet());

        Random r = new Random(seed);
        char[] text = new char[4096];
        String words = "shipment invoice customer warehouse pallet delivery route status pending confirmed ";
        for (int i = 0; i < text.length; i++) text[i] = words.charAt(r.nextInt(words.length()));
        long total = nDLQ + nReports + nEvents + nWork;
        long[] left = {nDLQ, nReports, nEvents, nWork};
        javax.jms.Destination[] to = {dlq, reports, events, work};
        String[] kind = {"FAILED", "REPORT", "EVENT", "TASK"};
        long sent = 0, bodyBytes = 0;
        String firstDLQ = null;
        while (sent < total) {
            long x = (long) (r.nextDouble() * (total - sent));
            int k = 0;
            while (x >= left[k]) {
                x -= left[k];
                k++;
            }
            left[k]--;
            sent++;
            int n = 1500 + r.nextInt(2000);
            int off = r.nextInt(text.length - n);
            String body = kind[k] + " order #" + sent + " " + new String(text, off, n);
            bodyBytes += body.length();
            TextMessage m = ps.createTextMessage(body);
            m.setStringProperty("kind", kind[k]);
            m.setLongProperty("order", sent);
            p.send(to[k], m);
            if (k == 0 && firstDLQ == null) firstDLQ = m.getJMSMessageID();
            if (sent % 100_000 == 0) System.err.printf("%d of %d sent%n", sent, total);
        }
        // the slow queue's consumer takes its first messages
        Session rs = c.createSession(false, Session.CLIENT_ACKNOWLEDGE);
        MessageConsumer rc = rs.createConsumer(reports);
        for (long i = 0; i < reportsTaken; i++) {
            Message m = rc.receive(30_000);
            if (m == null) throw new IllegalStateException("REPORTS: only " + i + " received");
            m.acknowledge();
        }
        rc.close();
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (workTaken.get() < nWork && System.nanoTime() < deadline) Thread.sleep(50);
        c.close();
        b.stop();
        b.waitUntilStopped();
        System.out.printf("{\"dlq\":%d,\"reports\":%d,\"reportsTaken\":%d,\"events\":%d,\"work\":%d,\"workTaken\":%d,"
                + "\"bodyBytes\":%d,\"firstDLQ\":\"%s\",\"seconds\":%.1f}%n",
                nDLQ, nReports, reportsTaken, nEvents, nWork, workTaken.get(), bodyBytes, firstDLQ, (System.nanoTime() - t0) / 1e9);
    }
}
