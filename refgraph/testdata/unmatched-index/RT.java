// Generator of this fixture (ActiveMQ 5.17.2 Debian jars, no BrokerService).
// Run from the repository root after brokerkit/build.sh:
//   CP=$(cat brokerkit/build/classpath); javac -d /tmp -cp "$CP" refgraph/testdata/unmatched-index/RT.java && java -cp "$CP:/tmp" RT STORE_DIR
// then record brokerkit Inspect on a copy of STORE_DIR with and without db.data/db.redo.
import java.io.File;
import org.apache.activemq.broker.ConnectionContext;
import org.apache.activemq.command.*;
import org.apache.activemq.store.TopicMessageStore;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;
public class RT {
  public static void main(String[] args) throws Exception {
    KahaDBPersistenceAdapter a = new KahaDBPersistenceAdapter();
    a.setDirectory(new File(args[0])); a.setCheckpointInterval(0); a.setCleanupInterval(0);
    a.start();
    ActiveMQTopic t = new ActiveMQTopic("T.U");
    TopicMessageStore ts = a.createTopicMessageStore(t);
    for (String c : new String[]{"c","all"}) {
      SubscriptionInfo si = new SubscriptionInfo(c, "s"); si.setDestination(t); si.setSubscribedDestination(t);
      if (c.equals("c")) si.setSelector("odd = false");
      ts.addSubscription(si, false);
    }
    ConnectionContext ctx = new ConnectionContext();
    MessageId[] ids = new MessageId[5];
    ProducerId pid = new ProducerId("ID:rt-1:1:1");
    for (int i = 1; i <= 4; i++) {
      ActiveMQTextMessage m = new ActiveMQTextMessage();
      ids[i] = new MessageId(pid, i);
      m.setMessageId(ids[i]); m.setDestination(t); m.setPersistent(true); m.setProducerId(pid);
      ts.addMessage(ctx, m);
    }
    MessageAck ack = new MessageAck(); ack.setAckType(MessageAck.STANDARD_ACK_TYPE); ack.setDestination(t);
    ack.setFirstMessageId(ids[4]); ack.setLastMessageId(ids[4]); ack.setMessageCount(1);
    ts.acknowledge(ctx, "c", "s", ids[4], ack);
    MessageAck un = new MessageAck(); un.setAckType(MessageAck.UNMATCHED_ACK_TYPE); un.setDestination(t);
    un.setFirstMessageId(ids[1]); un.setLastMessageId(ids[1]); un.setMessageCount(1);
    ts.acknowledge(ctx, "c", "s", ids[1], un);
    a.stop();
    System.out.println("done");
  }
}
