// Generator of this fixture (ActiveMQ 5.17.2 Debian jars, no BrokerService).
// Run from the repository root after brokerkit/build.sh:
//   CP=$(cat brokerkit/build/classpath); javac -d /tmp -cp "$CP" refgraph/testdata/order-index/RT5.java && java -cp "$CP:/tmp" RT5 STORE_DIR
// then record brokerkit Inspect on a copy of STORE_DIR with and without db.data/db.redo.
import java.io.File;
import org.apache.activemq.broker.ConnectionContext;
import org.apache.activemq.command.*;
import org.apache.activemq.store.TopicMessageStore;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;

/**
 * Destination order after a restart with the index: the broker loads its
 * destinations in ascending key order, a replay without index in order of
 * first use. T.000 and P.040 share a HashMap bucket; T.000 is created first.
 * P.040 keeps a pending message in db-1.log; T.000's only subscription b:s
 * (nothing pending) is in db-2.log. Visiting P.040 first makes db-2.log the
 * oldest candidate when T.000 is visited: b:s is rewritten and db-2.log goes.
 */
public class RT5 {
  static ConnectionContext ctx = new ConnectionContext();
  static ProducerId pid = new ProducerId("ID:rt5-1:1:1");
  static long seq = 0;
  static String body(int n) { StringBuilder b = new StringBuilder(); while (b.length() < n) b.append("0123456789"); return b.toString(); }
  static MessageId send(TopicMessageStore s, ActiveMQDestination d, int size) throws Exception {
    ActiveMQTextMessage m = new ActiveMQTextMessage();
    MessageId id = new MessageId(pid, ++seq);
    m.setMessageId(id); m.setDestination(d); m.setPersistent(true); m.setProducerId(pid); m.setText(body(size));
    s.addMessage(ctx, m);
    return id;
  }
  static MessageAck ack(ActiveMQDestination d, MessageId id) {
    MessageAck a = new MessageAck(); a.setAckType(MessageAck.STANDARD_ACK_TYPE); a.setDestination(d);
    a.setFirstMessageId(id); a.setLastMessageId(id); a.setMessageCount(1); return a;
  }
  static void sub(TopicMessageStore s, ActiveMQTopic t, String client) throws Exception {
    SubscriptionInfo si = new SubscriptionInfo(client, "s"); si.setDestination(t); si.setSubscribedDestination(t);
    s.addSubscription(si, false);
  }
  public static void main(String[] args) throws Exception {
    KahaDBPersistenceAdapter a = new KahaDBPersistenceAdapter();
    a.setDirectory(new File(args[0])); a.setCheckpointInterval(0); a.setCleanupInterval(0);
    a.setJournalMaxFileLength(4096); a.setCleanupOnStop(false); a.setPreallocationScope("none");
    a.start();
    ActiveMQTopic t = new ActiveMQTopic("T.000");
    ActiveMQTopic p = new ActiveMQTopic("P.040");
    ActiveMQTopic g = new ActiveMQTopic("T.GARBAGE");
    TopicMessageStore ts = a.createTopicMessageStore(t);
    TopicMessageStore ps = a.createTopicMessageStore(p);
    TopicMessageStore gs = a.createTopicMessageStore(g);
    sub(ts, t, "a");                 // T.000 first
    sub(ps, p, "p");
    sub(gs, g, "g");
    send(ps, p, 2500);               // pending for p:s, in db-1.log
    MessageId g1 = send(gs, g, 1200);
    gs.acknowledge(ctx, "g", "s", g1, ack(g, g1));
    sub(ts, t, "b");                 // db-2.log
    MessageId t1 = send(ts, t, 10);
    ts.acknowledge(ctx, "b", "s", t1, ack(t, t1));
    ts.deleteSubscription("a", "s"); // b:s: only the next-message marker left
    for (int i = 0; i < 6; i++) {   // garbage files
      MessageId id = send(gs, g, 1500);
      gs.acknowledge(ctx, "g", "s", id, ack(g, id));
    }
    a.stop();
    System.out.println("done");
  }
}
