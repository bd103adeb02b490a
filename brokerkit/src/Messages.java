import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import javax.jms.BytesMessage;
import javax.jms.Connection;
import javax.jms.DeliveryMode;
import javax.jms.JMSException;
import javax.jms.MapMessage;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.MessageProducer;
import javax.jms.ObjectMessage;
import javax.jms.QueueBrowser;
import javax.jms.Session;
import javax.jms.StreamMessage;
import javax.jms.TextMessage;

import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.broker.region.policy.PolicyEntry;
import org.apache.activemq.command.ActiveMQQueue;

import kahafs.fixture.Parcel;

/**
 * The "messages" scenario: every JMS message type, compressed and not, with properties of every type, the
 * optional headers set, a redelivered message and a dead-lettered one. What each send set is recorded in
 * logs/sent.json (keyed by message id; Generate folds it into messages.json next to what the broker
 * recovers from the store, see Recovered).
 *
 * Clients connect over TCP, so that every message is marshalled by the client (compression included)
 * and unmarshalled by the broker before the store marshals it again.
 */
final class Messages {
    private Messages() {}

    static final String QUEUE = "Q.MSG";
    static final String REDELIVERED = "Q.REDELIVERED";
    static final String DLQ_SOURCE = "Q.DLQSRC";
    static final String DLQ = "ActiveMQ.DLQ";
    /** The ends of the large texts: words no other message holds (kahafs cuts them from the JSON). */
    static final String END_PLAIN = " [the end of the large plain text]";
    static final String END_COMPRESSED = " [the end of the large compressed text]";
    /** About 100 years: the message never expires while the fixture is in use. */
    static final long TTL = 100L * 365 * 24 * 3600 * 1000;

    /** One send: the JMS message, what it is, the properties and headers set on it. */
    static final class Send {
        final String label;
        final Message msg;
        final Map<String, Object> body;
        final Map<String, Object> props = new LinkedHashMap<>();
        int priority = 4;
        long ttl = 0;
        String correlationId;
        String jmsType;
        ActiveMQQueue replyTo;
        String groupId;
        int groupSeq;

        Send(String label, Message msg, Map<String, Object> body) {
            this.label = label;
            this.msg = msg;
            this.body = body;
        }
    }

    static Map<String, Object> body(String type, String key, Object value) {
        Map<String, Object> b = new LinkedHashMap<>();
        b.put("type", type);
        if (value instanceof String) TypedJson.putText(b, key, (String) value);
        else if (value instanceof byte[]) TypedJson.putBytes(b, key, (byte[]) value);
        else if (key != null) b.put(key, value);
        return b;
    }

    /** Properties of every type the client accepts (a null is accepted only inside a map or list). */
    static Map<String, Object> allProperties() {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("pBoolean", true);
        p.put("pByte", (byte) -7);
        p.put("pShort", (short) -1234);
        p.put("pInt", 123456789);
        p.put("pLong", 9007199254740993L); // 2^53 + 1: not a float64
        p.put("pFloat", 3.25f);
        p.put("pDouble", -2.5e-300);
        p.put("pFloatNaN", Float.NaN);
        p.put("pDoubleInf", Double.NEGATIVE_INFINITY);
        p.put("pString", "h\u00e9llo w\u00f6rld \u2713 \ud83d\ude00");
        p.put("pEmpty", "");
        p.put("pNul", "a\u0000b");
        p.put("pChar", '\u03a9');
        Map<String, Object> deep = new LinkedHashMap<>();
        deep.put("deep", true);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("a", 1);
        m.put("b", "two");
        m.put("c", new byte[] {0, 1, 2, (byte) 255});
        m.put("d", new ArrayList<>(Arrays.asList(2L, 2.5, "x", null)));
        m.put("e", deep);
        m.put("f", null);
        p.put("pMap", m);
        p.put("pList", new ArrayList<>(Arrays.asList("x", 1, false, (short) 3, 'c', null)));
        return p;
    }

    static String text(int len, String seed) {
        StringBuilder sb = new StringBuilder(len);
        String[] words = {"queue", "broker", "journal", "message", "durable", "consumer", "producer", "store"};
        int i = 0;
        while (sb.length() < len) {
            sb.append(words[(i * 7 + seed.length()) % words.length]).append(i % 11 == 10 ? ".\n" : " ");
            i++;
        }
        sb.setLength(len);
        return seed + sb.substring(seed.length());
    }

    static byte[] pseudoRandom(int n, long seed) {
        byte[] b = new byte[n];
        long x = seed;
        for (int i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            b[i] = (byte) x;
        }
        return b;
    }

    static Map<String, Object> mapBody(boolean big) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("mBoolean", false);
        m.put("mByte", (byte) 127);
        m.put("mShort", Short.MIN_VALUE);
        m.put("mChar", 'z');
        m.put("mInt", Integer.MIN_VALUE);
        m.put("mLong", Long.MAX_VALUE);
        m.put("mFloat", -0.0f);
        m.put("mDouble", Math.PI);
        m.put("mString", "order-42 \u00fcber");
        m.put("mBytes", new byte[] {(byte) 0xca, (byte) 0xfe, 0, (byte) 0xba, (byte) 0xbe});
        m.put("mNull", null);
        Map<String, Object> nested = new LinkedHashMap<>();
        nested.put("street", "Main St");
        nested.put("no", 7);
        m.put("mMap", nested);
        m.put("mList", new ArrayList<>(Arrays.asList(1, "two", 3.0)));
        if (big) m.put("mBigString", text(9000, "big string (BIG_STRING_TYPE): ")); // > Short.MAX_VALUE / 4 chars
        return m;
    }

    static final class Recorder {
        final Map<String, Object> sent = new LinkedHashMap<>();

        String send(Session s, ActiveMQQueue q, Send x, boolean compressed) throws JMSException {
            for (Map.Entry<String, Object> e : x.props.entrySet()) x.msg.setObjectProperty(e.getKey(), e.getValue());
            if (x.correlationId != null) x.msg.setJMSCorrelationID(x.correlationId);
            if (x.jmsType != null) x.msg.setJMSType(x.jmsType);
            if (x.replyTo != null) x.msg.setJMSReplyTo(x.replyTo);
            if (x.groupId != null) {
                x.msg.setStringProperty("JMSXGroupID", x.groupId);
                x.msg.setIntProperty("JMSXGroupSeq", x.groupSeq);
            }
            MessageProducer p = s.createProducer(q);
            p.send(x.msg, DeliveryMode.PERSISTENT, x.priority, x.ttl);
            p.close();
            String id = x.msg.getJMSMessageID();
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("label", x.label);
            r.put("destination", "queue://" + q.getPhysicalName());
            r.put("compressedConnection", compressed);
            Map<String, Object> h = new LinkedHashMap<>();
            h.put("timestamp", x.msg.getJMSTimestamp());
            h.put("expiration", x.msg.getJMSExpiration());
            h.put("priority", x.priority);
            h.put("correlationId", x.correlationId);
            h.put("type", x.jmsType);
            h.put("replyTo", x.replyTo == null ? null : "queue://" + x.replyTo.getPhysicalName());
            h.put("groupId", x.groupId);
            h.put("groupSequence", x.groupId == null ? 0 : x.groupSeq);
            r.put("headers", h);
            r.put("properties", TypedJson.values(x.props));
            r.put("body", x.body);
            sent.put(id, r);
            return id;
        }
    }

    static ActiveMQConnectionFactory factory(String url, boolean compress) {
        ActiveMQConnectionFactory f = new ActiveMQConnectionFactory(url);
        Scenarios.Ctx.tune(f);
        f.setUseCompression(compress);
        f.setTrustAllPackages(true);
        return f;
    }

    /** Every kind of message: label, session (plain or compressing), and what to send. */
    static List<Send> sends(Session s, boolean zip) throws Exception {
        String z = zip ? "compressed" : "plain";
        List<Send> out = new ArrayList<>();

        String t = zip ? "Compressed text: \u00e9t\u00e9 \ud83d\ude00 NUL<\u0000> " + text(200, "")
                : "Hello from the messages scenario: a TextMessage with every header set.";
        Send text = new Send("text-" + z, s.createTextMessage(t), body("text", "text", t));
        text.props.putAll(allProperties());
        if (!zip) {
            text.priority = 7;
            text.ttl = TTL;
            text.correlationId = "corr-0001";
            text.jmsType = "kahafs.Greeting";
            text.replyTo = new ActiveMQQueue("Q.REPLY");
            text.groupId = "group-A";
            text.groupSeq = 3;
        }
        out.add(text);

        byte[] bytes = new byte[256];
        for (int i = 0; i < bytes.length; i++) bytes[i] = (byte) i;
        BytesMessage bm = s.createBytesMessage();
        bm.writeBytes(bytes);
        Send b = new Send("bytes-" + z, bm, body("bytes", "base64", bytes));
        b.props.put("kind", "bytes");
        b.props.put("seq", 2L);
        out.add(b);

        MapMessage mm = s.createMapMessage();
        Map<String, Object> map = mapBody(zip);
        for (Map.Entry<String, Object> e : map.entrySet()) mm.setObject(e.getKey(), e.getValue());
        Send m = new Send("map-" + z, mm, body("map", "value", TypedJson.values(map)));
        m.props.put("kind", "map");
        out.add(m);

        StreamMessage sm = s.createStreamMessage();
        List<Object> items = new ArrayList<>(Arrays.asList(true, (byte) -1, (short) 300, 'q', 42, -42L, 1.5f, -1.0e10,
                "stream \u00e5\u00e4\u00f6", new byte[] {9, 8, 7}, null));
        List<Object> typed = new ArrayList<>();
        for (Object o : items) {
            sm.writeObject(o);
            typed.add(TypedJson.value(o));
        }
        if (zip) ((org.apache.activemq.command.ActiveMQStreamMessage) sm).compress(); // the client never compresses a StreamMessage itself
        Send st = new Send("stream-" + z, sm, body("stream", "value", typed));
        st.props.put("kind", "stream");
        out.add(st);

        Parcel parcel = new Parcel(zip ? "P-2" : "P-1", zip ? 12 : 3, zip ? 0.125 : 2.5);
        ObjectMessage om = s.createObjectMessage(parcel);
        Map<String, Object> ob = body("object", "className", Parcel.class.getName());
        ob.put("toString", parcel.toString());
        Send o = new Send("object-" + z, om, ob);
        o.props.put("kind", "object");
        out.add(o);

        if (!zip) {
            Send plain = new Send("message-plain", s.createMessage(), body("none", null, null));
            plain.props.put("kind", "no body");
            plain.props.put("pInt", 1);
            out.add(plain);
            Send nullText = new Send("text-null", s.createTextMessage(), body("none", null, null));
            out.add(nullText);
            String big = text(5000, "A large uncompressed TextMessage: ") + END_PLAIN;
            out.add(new Send("text-large-plain", s.createTextMessage(big), body("text", "text", big)));
            byte[] rnd = pseudoRandom(6000, 42);
            BytesMessage lb = s.createBytesMessage();
            lb.writeBytes(rnd);
            out.add(new Send("bytes-large-plain", lb, body("bytes", "base64", rnd)));
        } else {
            String big = text(20000, "A large compressed TextMessage: ") + END_COMPRESSED;
            out.add(new Send("text-large-compressed", s.createTextMessage(big), body("text", "text", big)));
        }
        return out;
    }

    static void run(Scenarios.Ctx x) throws Exception {
        PolicyEntry red = new PolicyEntry();
        red.setQueue(REDELIVERED);
        red.setPersistJMSRedelivered(true);
        x.tcpConnector = true;
        x.start(Scenarios.policies(red));
        String tcp = x.broker.getTransportConnectors().get(0).getPublishableConnectString();
        Recorder rec = new Recorder();
        ActiveMQQueue q = new ActiveMQQueue(QUEUE);
        int onQueue = 0;
        for (boolean zip : new boolean[] {false, true}) {
            Connection c = factory(tcp, zip).createConnection();
            c.start();
            Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
            for (Send send : sends(s, zip)) {
                rec.send(s, q, send, zip);
                onQueue++;
            }
            c.close();
            x.step("sent every message type to " + QUEUE + (zip ? " with useCompression=true" : " without compression"));
        }

        // redelivered: persistJMSRedelivered writes an UPDATE (redeliveryCounter 1) before the first dispatch
        Connection c = factory(tcp, false).createConnection();
        c.start();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        ActiveMQQueue rq = new ActiveMQQueue(REDELIVERED);
        String t = "Delivered once, not acknowledged: redelivered.";
        Send rs = new Send("redelivered", s.createTextMessage(t), body("text", "text", t));
        rs.props.put("kind", "redelivered");
        String redeliveredId = rec.send(s, rq, rs, false);
        Session ca = c.createSession(false, Session.CLIENT_ACKNOWLEDGE);
        MessageConsumer rc = ca.createConsumer(rq);
        Message got = rc.receive(5000);
        if (got == null || !got.getJMSMessageID().equals(redeliveredId)) throw new IllegalStateException("redelivered: got " + got);
        rc.close();
        ca.close();
        x.step(REDELIVERED + ": 1 sent, received by a CLIENT_ACKNOWLEDGE consumer that closed without acknowledging");

        // dead-lettered: maximumRedeliveries 0, a transacted consumer rolls back once -> ActiveMQ.DLQ
        ActiveMQQueue src = new ActiveMQQueue(DLQ_SOURCE);
        String pt = "Poison: rolled back once, maximumRedeliveries=0, dead-lettered.";
        Send ps = new Send("dead-lettered", s.createTextMessage(pt), body("text", "text", pt));
        ps.props.put("kind", "dead-lettered");
        ps.correlationId = "corr-dlq";
        String poisonId = rec.send(s, src, ps, false);
        ActiveMQConnectionFactory df = factory(tcp, false);
        df.getRedeliveryPolicy().setMaximumRedeliveries(0);
        Connection dc = df.createConnection();
        dc.start();
        Session ds = dc.createSession(true, Session.SESSION_TRANSACTED);
        MessageConsumer dcons = ds.createConsumer(src);
        Message poison = dcons.receive(5000);
        if (poison == null) throw new IllegalStateException("dead-lettered: nothing received");
        ds.rollback();
        dcons.close();
        ds.close();
        dc.close();
        String dlqId = null;
        QueueBrowser br = s.createBrowser(new ActiveMQQueue(DLQ));
        for (int i = 0; i < 100 && dlqId == null; i++) {
            Enumeration<?> e = br.getEnumeration();
            if (e.hasMoreElements()) dlqId = ((Message) e.nextElement()).getJMSMessageID();
            else Scenarios.sleep(50);
        }
        br.close();
        if (dlqId == null) throw new IllegalStateException("dead-lettered: nothing in " + DLQ);
        @SuppressWarnings("unchecked")
        Map<String, Object> poisonRec = (Map<String, Object>) rec.sent.get(poisonId);
        poisonRec.put("deadLettered", DLQ);
        if (!dlqId.equals(poisonId)) {
            rec.sent.remove(poisonId);
            rec.sent.put(dlqId, poisonRec);
            poisonRec.put("sentAs", poisonId);
        }
        c.close();
        x.step(DLQ_SOURCE + ": 1 sent, rolled back once by a consumer with maximumRedeliveries=0 -> " + DLQ);
        x.stop();
        x.dropIndex();

        Files.write(new File(x.sdir, "logs/sent.json").toPath(), Json.write(rec.sent).getBytes(StandardCharsets.UTF_8));
        x.expectQueues.put(QUEUE, onQueue);
        x.expectQueues.put(REDELIVERED, 1);
        x.expectQueues.put(DLQ_SOURCE, 0);
        x.expectQueues.put(DLQ, 1);
        x.notes.put("messages.json", "sent: per message id, what the client set (headers, typed properties, body); "
                + "recovered: every pending message as the broker's own classes read it back from the store "
                + "(KahaDBPersistenceAdapter.recover on a copy, then the JMS getters)");
        x.notes.put("compression", "useCompression=true compresses Text, Bytes, Map and Object bodies; a StreamMessage "
                + "only when compress() is called, which the compressed stream message does");
        x.notes.put("redelivered", redeliveredId);
        x.notes.put("deadLettered", dlqId);
    }
}
