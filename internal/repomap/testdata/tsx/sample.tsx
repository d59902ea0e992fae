import { useState } from "react";

export interface ButtonProps { label: string }

export function Button({ label }: ButtonProps) {
  const [n, setN] = useState(0);
  return <button onClick={() => setN(n + 1)}>{label} {n}</button>;
}

export const Panel = (props: { title: string }) => <section><h2>{props.title}</h2></section>;
