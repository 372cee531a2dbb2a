// Prints what the JDK answers for each line of vectors.txt (see there): the reference the
// compat layer of `serve --compat stepfunctions-local` is tested against (tests/compat_sfl.rs).
import java.nio.file.*;
import java.util.*;

public class JavaRef {
  public static void main(String[] args) throws Exception {
    for (String line : Files.readAllLines(Paths.get(args[0]))) {
      if (line.startsWith("#") || line.isEmpty()) continue;
      String[] parts = line.split(" ");
      if (parts[0].equals("D")) {
        System.out.println("D " + Double.toString(Double.parseDouble(parts[1])));
      } else {
        Map<String, Integer> m = new HashMap<>();
        for (int i = 1; i < parts.length; i++) m.put(parts[i], i);
        System.out.println("K " + String.join(" ", m.keySet()));
      }
    }
  }
}
