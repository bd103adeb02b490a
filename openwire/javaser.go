package openwire

import (
	"strconv"
	"strings"
)

// Java object serialization (java.io.ObjectOutputStream): the constants an
// ObjectMessage's stream header is read with. Part of the Java
// serialization format. Nothing past the class descriptor is read: the
// object is never deserialized.
const (
	javaMagic          = 0xACED
	javaVersion        = 5
	tcNull             = 0x70
	tcClassDesc        = 0x72
	tcObject           = 0x73
	tcString           = 0x74
	tcArray            = 0x75
	tcClass            = 0x76
	tcReset            = 0x79
	tcLongString       = 0x7C
	tcProxyClassDesc   = 0x7D
	tcEnum             = 0x7E
	maxProxyInterfaces = 65535 // the JVM's limit on interfaces per class
)

// javaClassName reads the class name an ObjectMessage's serialization
// stream starts with: the object's class ("kahafs.fixture.Parcel"), an
// array's descriptor ("[Ljava.lang.String;"), "java.lang.String" for a
// string, "java.lang.Class" for a class, "proxy(I1,I2)" for a dynamic
// proxy. at supplies the offsets errors refer to.
func javaClassName(b []byte, at *reader) (string, error) {
	r := &reader{b: b, base: at.base, inflated: at.inflated, content: at.content, field: "object stream header"}
	if magic := r.u16("magic"); r.err == nil && magic != javaMagic {
		r.failAt(0, ErrMalformed, "not a Java serialization stream (magic "+strconv.FormatUint(uint64(magic), 16)+")")
	}
	if v := r.u16("version"); r.err == nil && v != javaVersion {
		r.failAt(2, ErrMalformed, "serialization stream version "+strconv.Itoa(int(v)))
	}
	tc := r.u8("type code")
	for r.err == nil && tc == tcReset {
		tc = r.u8("type code")
	}
	if r.err != nil {
		return "", r.err
	}
	switch tc {
	case tcString, tcLongString:
		return "java.lang.String", nil
	case tcClass:
		return "java.lang.Class", nil
	case tcNull:
		return "", nil
	case tcObject, tcArray, tcEnum:
	default:
		r.failAt(r.pos-1, ErrMalformed, "stream starts with type code 0x"+strconv.FormatUint(uint64(tc), 16))
		return "", r.err
	}
	switch desc := r.u8("class descriptor"); {
	case r.err != nil:
	case desc == tcClassDesc:
		name := r.utf("class name")
		if r.err == nil {
			return name, nil
		}
	case desc == tcProxyClassDesc:
		n := int(r.i32("proxy interfaces"))
		if r.err == nil && (n < 0 || n > maxProxyInterfaces || n > r.left()/2) {
			r.fail(ErrMalformed, "proxy of "+strconv.Itoa(n)+" interfaces")
		}
		names := make([]string, 0, max(0, min(n, r.left()/2)))
		for i := 0; i < n && r.err == nil; i++ {
			names = append(names, r.utf("proxy interface"))
		}
		if r.err == nil {
			return "proxy(" + strings.Join(names, ",") + ")", nil
		}
	default:
		r.failAt(r.pos-1, ErrMalformed, "class descriptor type code 0x"+strconv.FormatUint(uint64(desc), 16))
	}
	return "", r.err
}
