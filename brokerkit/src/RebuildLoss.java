import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import javax.jms.Connection;
import javax.jms.DeliveryMode;
import javax.jms.Message;
import javax.jms.MessageProducer;
import javax.jms.Session;
import javax.jms.TextMessage;
import javax.jms.TopicSubscriber;

import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.command.ActiveMQTopic;
import org.apache.activemq.command.SubscriptionInfo;
import org.apache.activemq.store.TopicMessageStore;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;

/**
 * A small KahaDB store on which deleting db.data loses messages: a durable subscription whose first
 * subscription command's file the cleanup deleted while messages it still has pending come before the command
 * the journal keeps. Made by an embedded 5.17 broker (JMS over vm://, journalMaxFileLength 16 KiB, no
 * preallocation, cleanup only when asked):
 *
 *   1. durable subscription c-rb:s-rb on topic T.RB, offline (its KahaSubscriptionCommand in db-1.log);
 *   2. batch A: 20 messages of 1000 bytes to T.RB (into db-2.log), all received by c-rb:s-rb (then 1 s for
 *      the acks to be stored);
 *   3. batch B: 8 messages to T.RB, left pending;
 *   4. the subscription's command written again (TopicMessageStore.addSubscription of its own
 *      SubscriptionInfo, as the broker's cleanup appends a copy of it, §6.2 6b; and as the bench generator
 *      writes it at 30 %): the index keeps B pending (its ack positions survive), the command's latest
 *      location moves past B;
 *   5. batch C: 5 messages to T.RB, pending;
 *   6. a cleanup (checkpoint(true)): db-1.log goes (nothing holds it: the subscription's command is the copy);
 *   7. clean stop, cleanupOnStop false.
 * With db.data the broker recovers B and C for c-rb:s-rb; rebuilding its index from the journal (db.data
 * deleted) it meets the subscription first at the copy, after B, and recovers C only.
 *
 * Usage: RebuildLoss OUTDIR   -> OUTDIR/store, OUTDIR/generated.json (batches' message ids, files, steps)
 */
public final class RebuildLoss {
    private RebuildLoss() {}

    static final int MAX_LEN = 16384;

    static List<String> send(Session s, ActiveMQTopic t, String tag, int n, int size) throws Exception {
        MessageProducer p = s.createProducer(t);
        p.setDeliveryMode(DeliveryMode.PERSISTENT);
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            TextMessage m = s.createTextMessage(MultiStore.body(tag, i, size));
            p.send(m);
            ids.add(m.getJMSMessageID());
        }
        p.close();
        return ids;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: RebuildLoss OUTDIR");
            System.exit(2);
        }
        File out = new File(args[0]);
        File store = new File(out, "store");
        if (store.exists()) throw new IllegalStateException(store + " exists");
        Files.createDirectories(out.toPath());
        Logs.setup(null, false);
        List<String> steps = new ArrayList<>();

        BrokerService b = new BrokerService();
        b.setBrokerName("rebuildloss");
        b.setUseJmx(false);
        b.setAdvisorySupport(false);
        b.setSchedulerSupport(false);
        b.setPersistent(true);
        b.setUseShutdownHook(false);
        b.setDataDirectoryFile(new File(out, "broker-data"));
        KahaDBPersistenceAdapter a = new KahaDBPersistenceAdapter();
        a.setDirectory(store);
        a.setJournalMaxFileLength(MAX_LEN);
        a.setPreallocationScope("none");
        a.setCheckpointInterval(3600_000L);
        a.setCleanupInterval(3600_000L);
        a.setCleanupOnStop(false);
        b.setPersistenceAdapter(a);
        b.start();
        b.waitUntilStarted();

        ActiveMQTopic rb = new ActiveMQTopic("T.RB");
        ActiveMQConnectionFactory cf = new ActiveMQConnectionFactory("vm://rebuildloss?create=false");
        Connection sub = cf.createConnection();
        sub.setClientID("c-rb");
        sub.start();
        Session ss = sub.createSession(false, Session.AUTO_ACKNOWLEDGE);
        ss.createDurableSubscriber(rb, "s-rb").close();
        steps.add("durable subscription c-rb:s-rb on T.RB, offline");

        Connection pc = cf.createConnection();
        pc.start();
        Session ps = pc.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Map<String, Object> batches = new LinkedHashMap<>();
        List<String> batchA = send(ps, rb, "A", 20, 1000);
        batches.put("A", batchA);
        TopicSubscriber ts = ss.createDurableSubscriber(rb, "s-rb");
        int got = 0;
        for (int i = 0; i < batchA.size(); i++) {
            Message m = ts.receive(5000);
            if (m == null) break;
            got++;
        }
        ts.close();
        Thread.sleep(1000); // the acks stored before batch B
        if (got != batchA.size()) throw new IllegalStateException("received " + got + " of batch A");
        steps.add("batch A: " + batchA.size() + " messages to T.RB, all received by c-rb:s-rb");
        batches.put("B", send(ps, rb, "B", 8, 1000));
        steps.add("batch B: 8 messages to T.RB, pending");

        TopicMessageStore tms = a.createTopicMessageStore(rb);
        SubscriptionInfo si = tms.lookupSubscription("c-rb", "s-rb");
        if (si == null) throw new IllegalStateException("no subscription c-rb:s-rb");
        tms.addSubscription(si, false);
        steps.add("c-rb:s-rb's subscription command written again (TopicMessageStore.addSubscription of its own info)");

        batches.put("C", send(ps, rb, "C", 5, 1000));
        steps.add("batch C: 5 messages to T.RB, pending");

        List<Integer> before = new ArrayList<>(Inspect.fileIds(store));
        a.checkpoint(true);
        List<Integer> after = new ArrayList<>(Inspect.fileIds(store));
        steps.add("cleanup: files " + before + " -> " + after);
        pc.close();
        sub.close();
        b.stop();
        b.waitUntilStopped();
        steps.add("clean stop (cleanupOnStop false)");
        Logs.flush();
        if (after.contains(1)) throw new IllegalStateException("the cleanup kept db-1.log: " + after + " " + Logs.cleanupLines());

        Map<String, Object> res = new LinkedHashMap<>();
        res.put("journalMaxFileLength", MAX_LEN);
        res.put("steps", steps);
        res.put("batches", batches);
        res.put("filesBeforeCleanup", before);
        res.put("filesAfterCleanup", after);
        res.put("cleanupLines", Logs.cleanupLines());
        Files.write(new File(out, "generated.json").toPath(), Json.write(res).getBytes(StandardCharsets.UTF_8));
        System.out.println("RebuildLoss: wrote " + store);
        System.exit(0);
    }
}
