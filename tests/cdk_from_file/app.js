// A CDK app of the two forms CDK users write that sfn-local must read as they are (#37):
// a definition kept in a file of its own (`DefinitionBody.fromFile`, which `cdk synth` writes as
// `DefinitionS3Location` plus an asset in cdk.out), and a LambdaInvoke with
// `payloadResponseOnly` (a plain function ARN as the Resource). `cdk synth` of this app gives
// cdk.out/, kept as synthesized (tests/sam_app.rs reads it).
const cdk = require('aws-cdk-lib');
const lambda = require('aws-cdk-lib/aws-lambda');
const sfn = require('aws-cdk-lib/aws-stepfunctions');
const tasks = require('aws-cdk-lib/aws-stepfunctions-tasks');

class FilesStack extends cdk.Stack {
  constructor(scope, id, props) {
    super(scope, id, props);
    const charge = new lambda.Function(this, 'Charge', {
      runtime: lambda.Runtime.NODEJS_20_X,
      handler: 'index.handler',
      code: lambda.Code.fromAsset('lambda/charge'),
    });
    new sfn.StateMachine(this, 'Orders', {
      definitionBody: sfn.DefinitionBody.fromFile('statemachine/orders.asl.json'),
      definitionSubstitutions: { ChargeArn: charge.functionArn },
    });
    const invoke = new tasks.LambdaInvoke(this, 'ChargeDirect', {
      lambdaFunction: charge,
      payloadResponseOnly: true,
    });
    new sfn.StateMachine(this, 'Direct', {
      definitionBody: sfn.DefinitionBody.fromChainable(invoke),
    });
  }
}

const app = new cdk.App();
new FilesStack(app, 'FilesStack');
