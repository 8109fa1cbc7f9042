// The password encryption Kafka 3.x applied to dynamic configs before
// ZooKeeper (password.encoder.*), written from its description with the
// JDK's own PBKDF2 and AES: a random 256-byte salt, a key derived from the
// secret, the cipher's parameters, all as key:value pairs joined by ",".
// Run by TestPasswordEncodingMatchesJava (java PasswordEncoding.java), one
// command a line on stdin, fields separated by tabs, one answer a line:
//   encode SECRET CIPHER KEYLENGTH ITERATIONS PASSWORD  -> the stored form
//   decode SECRET STORED                                -> the password
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.crypto.Cipher;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.PBEKeySpec;
import javax.crypto.spec.SecretKeySpec;

public class PasswordEncoding {
    static SecretKeySpec key(String secret, String factory, byte[] salt, int iterations, int keyLength) throws Exception {
        byte[] k = SecretKeyFactory.getInstance(factory)
            .generateSecret(new PBEKeySpec(secret.toCharArray(), salt, iterations, keyLength)).getEncoded();
        return new SecretKeySpec(k, "AES");
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        for (String line; (line = in.readLine()) != null; ) {
            out.println(run(line.split("\t")));
        }
    }

    static String run(String[] a) throws Exception {
        Base64.Encoder b64 = Base64.getEncoder();
        if (a[0].equals("encode")) {
            String secret = a[1], alg = a[2], password = a[5];
            int keyLength = Integer.parseInt(a[3]), iterations = Integer.parseInt(a[4]);
            byte[] salt = new byte[256];
            new SecureRandom().nextBytes(salt);
            Cipher c = Cipher.getInstance(alg);
            c.init(Cipher.ENCRYPT_MODE, key(secret, "PBKDF2WithHmacSHA512", salt, iterations, keyLength));
            byte[] enc = c.doFinal(password.getBytes(StandardCharsets.UTF_8));
            Map<String, String> m = new LinkedHashMap<>();
            m.put("keyFactoryAlgorithm", "PBKDF2WithHmacSHA512");
            m.put("cipherAlgorithm", alg);
            m.put("keyLength", String.valueOf(keyLength));
            m.put("salt", b64.encodeToString(salt));
            m.put("iterations", String.valueOf(iterations));
            m.put("encryptedPassword", b64.encodeToString(enc));
            m.put("passwordLength", String.valueOf(password.length()));
            if (alg.startsWith("AES/GCM/")) {
                GCMParameterSpec spec = c.getParameters().getParameterSpec(GCMParameterSpec.class);
                m.put("authenticationTagLength", String.valueOf(spec.getTLen()));
                m.put("initializationVector", b64.encodeToString(spec.getIV()));
            } else {
                m.put("initializationVector", b64.encodeToString(c.getIV()));
            }
            StringBuilder sb = new StringBuilder();
            for (Map.Entry<String, String> e : m.entrySet()) {
                if (sb.length() > 0) sb.append(',');
                sb.append(e.getKey()).append(':').append(e.getValue());
            }
            return sb.toString();
        }
        Map<String, String> m = new LinkedHashMap<>();
        for (String kv : a[2].split(",")) {
            int i = kv.indexOf(':');
            m.put(kv.substring(0, i).trim(), kv.substring(i + 1).trim());
        }
        Base64.Decoder d = Base64.getDecoder();
        String alg = m.get("cipherAlgorithm");
        Cipher c = Cipher.getInstance(alg);
        byte[] iv = d.decode(m.get("initializationVector"));
        SecretKeySpec k = key(a[1], m.get("keyFactoryAlgorithm"), d.decode(m.get("salt")),
            Integer.parseInt(m.get("iterations")), Integer.parseInt(m.get("keyLength")));
        if (alg.startsWith("AES/GCM/")) {
            c.init(Cipher.DECRYPT_MODE, k, new GCMParameterSpec(Integer.parseInt(m.get("authenticationTagLength")), iv));
        } else {
            c.init(Cipher.DECRYPT_MODE, k, new IvParameterSpec(iv));
        }
        String p = new String(c.doFinal(d.decode(m.get("encryptedPassword"))), StandardCharsets.UTF_8);
        if (p.length() != Integer.parseInt(m.get("passwordLength"))) throw new IllegalStateException("length");
        return p;
    }
}
