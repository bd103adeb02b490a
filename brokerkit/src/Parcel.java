package kahafs.fixture;

import java.io.Serializable;

/**
 * The body of the "messages" scenario's ObjectMessages: a plain Serializable class, so that the journal
 * holds a Java serialization stream whose header names it (kahafs.fixture.Parcel). kahafs reads the
 * class name from that header and never deserializes.
 */
public final class Parcel implements Serializable {
    private static final long serialVersionUID = 20261129L;

    public final String id;
    public final int quantity;
    public final double weightKg;

    public Parcel(String id, int quantity, double weightKg) {
        this.id = id;
        this.quantity = quantity;
        this.weightKg = weightKg;
    }

    @Override
    public String toString() {
        return "Parcel{id=" + id + ", quantity=" + quantity + ", weightKg=" + weightKg + "}";
    }
}
