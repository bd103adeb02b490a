import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.activemq.command.ActiveMQDestination;
import org.apache.activemq.command.ActiveMQQueue;
import org.apache.activemq.command.ActiveMQTopic;
import org.apache.activemq.command.Message;
import org.apache.activemq.command.MessageAck;
import org.apache.activemq.command.MessageId;
import org.apache.activemq.command.SubscriptionInfo;
import org.apache.activemq.command.XATransactionId;
import org.apache.activemq.store.MessageRecoveryListener;
import org.apache.activemq.store.MessageStore;
import org.apache.activemq.store.TopicMessageStore;
import org.apache.activemq.store.TransactionRecoveryListener;
import org.apache.activemq.store.TransactionStore;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;
import org.apache.activemq.store.kahadb.disk.journal.Journal;

/**
 * Opens a KahaDB store AS IT IS (index included) with a standalone KahaDBPersistenceAdapter and reports
 * what the broker recovers; then stops the adapter (stop-time checkpoint with cleanup, cleanupOnStop=true)
 * and reports which journal files that first cleanup deleted. MODIFIES the store: run it on a copy.
 *
 * Usage: Inspect STORE_DIR OUT.json [--max-file-length N] [--log FILE] [--no-gc-trace]
 *   --max-file-length defaults to journalMaxFileLength from STORE_DIR/../expected.json, else 32 MiB.
 *   --no-gc-trace logs MessageDatabase at DEBUG (see Logs.setup: 5.17.2's TRACE line can fail the cleanup).
 * Periodic checkpoints are disabled (checkpointInterval=0, cleanupInterval=0) so the only cleanup is the
 * one at stop.
 */
public final class Inspect {
    private Inspect() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: Inspect STORE_DIR OUT.json [--max-file-length N] [--log FILE] [--no-gc-trace]");
            System.exit(2);
        }
        File store = new File(args[0]);
        File out = new File(args[1]);
        int maxLen = -1;
        File log = null;
        boolean gcTrace = true;
        for (int i = 2; i < args.length; i++) {
            if (args[i].equals("--max-file-length") && i + 1 < args.length) maxLen = Integer.parseInt(args[++i]);
            else if (args[i].equals("--log") && i + 1 < args.length) log = new File(args[++i]);
            else if (args[i].equals("--no-gc-trace")) gcTrace = false;
            else {
                System.err.println("unknown argument: " + args[i]);
                System.exit(2);
            }
        }
        if (maxLen <= 0) maxLen = maxFileLengthFromExpected(store);
        Logs.setup(log, gcTrace);
        String json = inspect(store, maxLen);
        Logs.flush();
        Files.write(out.toPath(), json.getBytes(StandardCharsets.UTF_8));
        System.out.println("Inspect: wrote " + out);
    }

    static final Pattern MAX_LEN = Pattern.compile("\"journalMaxFileLength\"\\s*:\\s*(\\d+)");

    static int maxFileLengthFromExpected(File store) {
        File exp = new File(store.getAbsoluteFile().getParentFile(), "expected.json");
        if (exp.isFile()) {
            try {
                String s = new String(Files.readAllBytes(exp.toPath()), StandardCharsets.UTF_8);
                Matcher m = MAX_LEN.matcher(s);
                if (m.find()) return Integer.parseInt(m.group(1));
            } catch (IOException e) {
                // fall through
            }
        }
        return Journal.DEFAULT_MAX_FILE_LENGTH;
    }

    static TreeSet<Integer> fileIds(File store) {
        TreeSet<Integer> ids = new TreeSet<>();
        File[] fs = store.listFiles();
        if (fs != null) {
            for (File f : fs) {
                String n = f.getName();
                if (f.isFile() && n.startsWith("db-") && n.endsWith(".log")) {
                    try {
                        ids.add(Integer.parseInt(n.substring(3, n.length() - 4)));
                    } catch (NumberFormatException e) {
                        // the broker ignores such names too
                    }
                }
            }
        }
        return ids;
    }

    static final class Collector implements MessageRecoveryListener {
        final List<String> ids = new ArrayList<>();
        @Override public boolean recoverMessage(Message m) { ids.add(m.getMessageId().toString()); return true; }
        @Override public boolean recoverMessageReference(MessageId id) { ids.add(id.toString()); return true; }
        @Override public boolean hasSpace() { return true; }
        @Override public boolean isDuplicate(MessageId id) { return false; }
    }

    public static String inspect(File store, int maxLen) throws Exception {
        TreeSet<Integer> before = fileIds(store);
        KahaDBPersistenceAdapter a = new KahaDBPersistenceAdapter();
        a.setDirectory(store);
        a.setJournalMaxFileLength(maxLen);
        a.setCheckpointInterval(0);
        a.setCleanupInterval(0);
        a.start();

        Map<String, Object> out = new LinkedHashMap<>();
        List<String> dests = new ArrayList<>();
        Map<String, Object> queues = new TreeMap<>();
        Map<String, Object> queueCounts = new TreeMap<>();
        Map<String, Object> subs = new TreeMap<>();
        List<Object> prepared = new ArrayList<>();
        try {
            // A broker recovers its prepared XA transactions first (TransactionBroker.start): the messages they
            // acknowledge are then hidden from dispatch and from the queue's count until the outcome
            // (KahaDBStore.trackRecoveredAcks / ackedAndPreparedMap). Do the same before reading the stores.
            TransactionStore txs = a.createTransactionStore();
            txs.recover(new TransactionRecoveryListener() {
                @Override
                public void recover(XATransactionId xid, Message[] added, MessageAck[] acks) {
                    Map<String, Object> t = new LinkedHashMap<>();
                    t.put("xid", xid.toString());
                    List<String> adds = new ArrayList<>();
                    List<String> addDests = new ArrayList<>();
                    for (Message m : added) {
                        adds.add(m.getMessageId().toString());
                        addDests.add(m.getDestination() == null ? null : m.getDestination().getQualifiedName());
                    }
                    List<String> ackIds = new ArrayList<>();
                    List<String> ackDests = new ArrayList<>();
                    for (MessageAck k : acks) {
                        ackIds.add(k.getLastMessageId() == null ? null : k.getLastMessageId().toString());
                        ackDests.add(k.getDestination() == null ? null : k.getDestination().getQualifiedName());
                    }
                    t.put("adds", adds);
                    t.put("acks", ackIds);
                    t.put("addDestinations", addDests);
                    t.put("ackDestinations", ackDests);
                    prepared.add(t);
                }
            });
            TreeSet<String> names = new TreeSet<>();
            List<ActiveMQDestination> all = new ArrayList<>(a.getDestinations());
            for (ActiveMQDestination d : all) names.add(d.getQualifiedName());
            dests.addAll(names);
            all.sort((x, y) -> x.getQualifiedName().compareTo(y.getQualifiedName()));
            for (ActiveMQDestination d : all) {
                if (d.isQueue()) {
                    MessageStore ms = a.createQueueMessageStore((ActiveMQQueue) d);
                    ms.start(); // loads the store statistics (getMessageCount)
                    Collector c = new Collector();
                    ms.recover(c);
                    queues.put(d.getPhysicalName(), c.ids);
                    queueCounts.put(d.getPhysicalName(), ms.getMessageCount());
                } else if (d.isTopic()) {
                    TopicMessageStore ts = a.createTopicMessageStore((ActiveMQTopic) d);
                    ts.start();
                    SubscriptionInfo[] infos = ts.getAllSubscriptions();
                    for (SubscriptionInfo si : infos) {
                        Collector c = new Collector();
                        int count = ts.getMessageCount(si.getClientId(), si.getSubscriptionName());
                        ts.recoverSubscription(si.getClientId(), si.getSubscriptionName(), c);
                        Map<String, Object> s = new LinkedHashMap<>();
                        s.put("clientId", si.getClientId());
                        s.put("subscriptionName", si.getSubscriptionName());
                        s.put("selector", si.getSelector());
                        s.put("noLocal", si.isNoLocal());
                        s.put("count", count);
                        s.put("pending", c.ids);
                        subs.put(d.getQualifiedName() + "|" + si.getClientId() + ":" + si.getSubscriptionName(), s);
                    }
                }
            }
        } finally {
            a.stop();
        }
        TreeSet<Integer> after = fileIds(store);
        TreeSet<Integer> deleted = new TreeSet<>(before);
        deleted.removeAll(after);
        TreeSet<Integer> created = new TreeSet<>(after);
        created.removeAll(before);

        out.put("maxFileLength", maxLen);
        out.put("filesBefore", new ArrayList<>(before));
        out.put("filesAfter", new ArrayList<>(after));
        out.put("deleted", new ArrayList<>(deleted));
        out.put("created", new ArrayList<>(created));
        out.put("cleanupLines", Logs.cleanupLines());
        out.put("destinations", dests);
        out.put("queues", queues);
        out.put("queueCounts", queueCounts);
        out.put("subscriptions", subs);
        out.put("prepared", prepared);
        return Json.write(out);
    }
}
