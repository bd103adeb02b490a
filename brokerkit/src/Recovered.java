import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.activemq.command.ActiveMQDestination;
import org.apache.activemq.command.ActiveMQQueue;
import org.apache.activemq.command.ActiveMQTopic;
import org.apache.activemq.command.Message;
import org.apache.activemq.command.MessageId;
import org.apache.activemq.store.MessageRecoveryListener;
import org.apache.activemq.store.MessageStore;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;

/**
 * Every message a store holds, as the broker's own classes read it back: a standalone
 * KahaDBPersistenceAdapter recovers each destination's messages (MessageStore.recover: the latest version
 * of each, UPDATEs applied) and the JMS getters decode headers, properties and body (TypedJson). The
 * oracle of kahafs's OpenWire decoder. MODIFIES the store (the adapter's stop): run it on a copy.
 *
 * Usage: Recovered STORE_DIR OUT.json [--max-file-length N]
 * Output: {"ID:...": {"headers":{...},"properties":{...},"body":{...}}, ...} in destination, then recovery order
 */
public final class Recovered {
    private Recovered() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: Recovered STORE_DIR OUT.json [--max-file-length N]");
            System.exit(2);
        }
        File store = new File(args[0]);
        int maxLen = args.length >= 4 && args[2].equals("--max-file-length") ? Integer.parseInt(args[3])
                : Inspect.maxFileLengthFromExpected(store);
        Files.write(new File(args[1]).toPath(), recover(store, maxLen).getBytes(StandardCharsets.UTF_8));
    }

    static final class Collector implements MessageRecoveryListener {
        final List<Message> messages = new ArrayList<>();
        @Override public boolean recoverMessage(Message m) { messages.add(m); return true; }
        @Override public boolean recoverMessageReference(MessageId id) { return true; }
        @Override public boolean hasSpace() { return true; }
        @Override public boolean isDuplicate(MessageId id) { return false; }
    }

    static String recover(File store, int maxLen) throws Exception {
        KahaDBPersistenceAdapter a = new KahaDBPersistenceAdapter();
        a.setDirectory(store);
        a.setJournalMaxFileLength(maxLen);
        a.setCheckpointInterval(0);
        a.setCleanupInterval(0);
        a.start();
        Map<String, Object> msgs = new LinkedHashMap<>();
        try {
            List<ActiveMQDestination> all = new ArrayList<>(a.getDestinations());
            all.sort((x, y) -> x.getQualifiedName().compareTo(y.getQualifiedName()));
            for (ActiveMQDestination d : all) {
                MessageStore ms = d.isQueue() ? a.createQueueMessageStore((ActiveMQQueue) d)
                        : a.createTopicMessageStore((ActiveMQTopic) d);
                ms.start();
                Collector c = new Collector();
                ms.recover(c);
                for (Message m : c.messages) msgs.put(m.getMessageId().toString(), TypedJson.message(m));
            }
        } finally {
            a.stop();
        }
        return Json.write(msgs);
    }
}
