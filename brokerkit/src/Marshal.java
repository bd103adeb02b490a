import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.activemq.command.ActiveMQBlobMessage;
import org.apache.activemq.command.ActiveMQBytesMessage;
import org.apache.activemq.command.ActiveMQMapMessage;
import org.apache.activemq.command.ActiveMQMessage;
import org.apache.activemq.command.ActiveMQObjectMessage;
import org.apache.activemq.command.ActiveMQQueue;
import org.apache.activemq.command.ActiveMQStreamMessage;
import org.apache.activemq.command.ActiveMQTextMessage;
import org.apache.activemq.command.ActiveMQTopic;
import org.apache.activemq.command.LocalTransactionId;
import org.apache.activemq.command.ConnectionId;
import org.apache.activemq.command.Message;
import org.apache.activemq.command.MessageId;
import org.apache.activemq.command.ProducerId;
import org.apache.activemq.openwire.OpenWireFormat;
import org.apache.activemq.util.ByteSequence;

import kahafs.fixture.Parcel;

/**
 * Message blobs as a KahaDB store of each OpenWire version writes them: KahaDBStore marshals with a plain
 * `new OpenWireFormat()` (loose encoding, no cache, size prefix) set to the store's version, 11 by default, 6
 * for a store whose index predates the field (activemq-openwire-legacy has the marshallers of versions 2 to
 * 9). For each version in VERSIONS, OUTDIR/vN/NAME.bin; OUTDIR/expected.json holds, per version and name,
 * what the same OpenWireFormat reads back (TypedJson), or why it cannot marshal it (a BlobMessage before
 * version 3). Generated into testdata/openwire by: run.sh Marshal testdata/openwire 2 3 6 9 10 11 12
 *
 * Usage: Marshal OUTDIR VERSION...
 */
public final class Marshal {
    private Marshal() {}

    static final ProducerId PRODUCER = new ProducerId("ID:marshal-host-1-1796000000000-0:1:1:1");

    static <T extends Message> T init(T m, int seq) {
        m.setProducerId(PRODUCER);
        m.setMessageId(new MessageId(PRODUCER, seq));
        m.setDestination(new ActiveMQQueue("Q.MARSHAL"));
        m.setPersistent(true);
        m.setTimestamp(1796000000000L + seq);
        m.setBrokerInTime(1796000000100L + seq);
        m.setPriority((byte) 4);
        return m;
    }

    static List<Object[]> messages() throws Exception {
        List<Object[]> out = new ArrayList<>();
        ActiveMQTextMessage text = init(new ActiveMQTextMessage(), 1);
        text.setText("Text with every header: \u00e9t\u00e9 \ud83d\ude00 NUL<\u0000>");
        Map<String, Object> nested = new LinkedHashMap<>();
        nested.put("bytes", new byte[] {0, (byte) 255});
        nested.put("list", new ArrayList<>(Arrays.asList(1, "two", null)));
        text.setObjectProperty("pString", "h\u00e9llo \ud83d\ude00");
        text.setObjectProperty("pLong", 9007199254740993L);
        text.setObjectProperty("pDouble", -0.5);
        text.setObjectProperty("pChar", 'x');
        text.setObjectProperty("pMap", nested);
        text.setCorrelationId("corr-1");
        text.setType("kahafs.Marshal");
        text.setReplyTo(new ActiveMQTopic("T.REPLY"));
        text.setGroupID("group-M");
        text.setGroupSequence(9);
        text.setExpiration(4949600000000L);
        text.setPriority((byte) 8);
        text.setRedeliveryCounter(3);
        text.setOriginalDestination(new ActiveMQQueue("Q.ORIGIN"));
        text.setTransactionId(new LocalTransactionId(new ConnectionId("ID:marshal-host-1-1796000000000-0:1"), 17));
        text.setUserID("admin");
        out.add(new Object[] {"text", text});

        ActiveMQTextMessage zipped = init(new ActiveMQTextMessage(), 2);
        zipped.setText(Messages.text(600, "Compressed text: "));
        zipped.compress();
        out.add(new Object[] {"text-compressed", zipped});

        ActiveMQBytesMessage bytes = init(new ActiveMQBytesMessage(), 3);
        bytes.writeBytes(Messages.pseudoRandom(300, 7));
        bytes.storeContent();
        bytes.compress();
        out.add(new Object[] {"bytes-compressed", bytes});

        ActiveMQMapMessage map = init(new ActiveMQMapMessage(), 4);
        for (Map.Entry<String, Object> e : Messages.mapBody(false).entrySet()) map.setObject(e.getKey(), e.getValue());
        out.add(new Object[] {"map", map});

        ActiveMQStreamMessage stream = init(new ActiveMQStreamMessage(), 5);
        for (Object o : Arrays.asList(true, (byte) 1, (short) 2, 'c', 4, 5L, 6.5f, 7.5, "eight", new byte[] {9}, null)) stream.writeObject(o);
        stream.storeContent();
        out.add(new Object[] {"stream", stream});

        ActiveMQObjectMessage object = init(new ActiveMQObjectMessage(), 6);
        object.setObject(new Parcel("P-M", 1, 1.0));
        object.compress();
        out.add(new Object[] {"object-compressed", object});

        ActiveMQBlobMessage blob = init(new ActiveMQBlobMessage(), 7);
        blob.setRemoteBlobUrl("http://blobs.example/1");
        blob.setMimeType("application/pdf");
        blob.setDeletedByBroker(true);
        out.add(new Object[] {"blob", blob});

        out.add(new Object[] {"message", init(new ActiveMQMessage(), 8)});
        return out;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: Marshal OUTDIR VERSION...");
            System.exit(2);
        }
        File outdir = new File(args[0]);
        Map<String, Object> expected = new LinkedHashMap<>();
        for (int i = 1; i < args.length; i++) {
            int version = Integer.parseInt(args[i]);
            File vdir = new File(outdir, "v" + version);
            vdir.mkdirs();
            Map<String, Object> byName = new LinkedHashMap<>();
            for (Object[] nm : messages()) {
                String name = (String) nm[0];
                Message m = (Message) nm[1];
                OpenWireFormat wf = new OpenWireFormat(version); // as KahaDBStore: loose, no cache, size prefix
                ByteSequence b;
                try {
                    b = wf.marshal(m);
                } catch (java.io.IOException e) {
                    byName.put(name, "cannot marshal: " + e.getMessage()); // BlobMessage before version 3
                    continue;
                }
                byte[] blob = Arrays.copyOfRange(b.getData(), b.getOffset(), b.getOffset() + b.getLength());
                Files.write(new File(vdir, name + ".bin").toPath(), blob);
                Object back;
                try {
                    back = TypedJson.message((Message) new OpenWireFormat(version).unmarshal(new ByteSequence(blob)));
                } catch (Exception e) {
                    back = "error: " + e;
                }
                byName.put(name, back);
            }
            expected.put(String.valueOf(version), byName);
        }
        Files.write(new File(outdir, "expected.json").toPath(), Json.write(expected).getBytes(StandardCharsets.UTF_8));
    }
}
