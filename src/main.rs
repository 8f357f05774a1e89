use anyhow::Context as _;
use clap::Parser as _;
use cronscaler::{
    cli::{Cli, Command},
    foo::Foo,
};
use kube::CustomResourceExt as _;

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Crd => {
            print!(
                "{}",
                serde_norway::to_string(&Foo::crd()).context("serializing the Foo CRD")?
            );
            Ok(())
        }
        Command::Run(_) => todo!(),
    }
}
