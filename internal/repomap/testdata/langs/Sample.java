package demo;
public class Sample {
    public static final int LIMIT = 5;
    private int count;
    public Sample() {}
    public int next() { return count++; }
}
interface Shape { double area(); }
